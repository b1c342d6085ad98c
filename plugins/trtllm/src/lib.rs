//! llm-triage engine plugin: trtllm (being written)
