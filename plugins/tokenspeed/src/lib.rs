//! llm-triage engine plugin: tokenspeed (being written)
