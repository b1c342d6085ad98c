//! llm-triage engine plugin: vllm (being written)
