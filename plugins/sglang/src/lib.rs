//! llm-triage engine plugin: sglang (being written)
