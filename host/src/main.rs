fn main() {
    std::process::exit(llm_triage::exit::OK);
}
