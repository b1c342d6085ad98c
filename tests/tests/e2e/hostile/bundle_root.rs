//! `bundle --analysis-root` over a directory others can write to (issue 15 point 4): a
//! link to a file outside the root, a linked directory outside it, a FIFO, a link to
//! `/proc/self/environ` and an over-size file are none of them embedded; each is listed
//! under "Skipped files", counted on stderr, and the real reports are still bundled.

use std::path::Path;
use std::time::Duration;

use crate::util::llm_triage;

#[test]
fn bundle_embeds_nothing_from_outside_the_root_and_lists_each_file_left_out() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "Model: SECRET-FILE-7f3a\n").unwrap();
    std::fs::create_dir(outside.path().join("model")).unwrap();
    std::fs::write(
        outside.path().join("model/analysis_sglang.txt"),
        "Model: SECRET-DIR-7f3a\n",
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("qwen")).unwrap();
    std::fs::write(
        root.join("qwen/analysis_sglang.txt"),
        "Model: Qwen/Qwen3-8B\n",
    )
    .unwrap();
    let link = |target: &Path, name: &str| {
        let path = root.join(name);
        std::os::unix::fs::symlink(target, &path).unwrap();
        path
    };
    let listed = [
        link(&secret, "qwen/analysis_vllm.txt"),
        link(&outside.path().join("model"), "leak"),
        link(Path::new("/proc/self/environ"), "analysis_env.txt"),
        root.join("qwen/analysis_trtllm.txt"),
        root.join("qwen/analysis_tokenspeed.md"),
    ];
    let status = std::process::Command::new("mkfifo")
        .arg(&listed[3])
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::File::create(&listed[4])
        .unwrap()
        .set_len(64 << 20)
        .unwrap();

    let out = llm_triage()
        .args(["bundle", "--analysis-root"])
        .arg(&root)
        .env("LLM_TRIAGE_TEST_SECRET", "SECRET-ENV-7f3a")
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stdout.contains("SECRET"), "{stdout}");
    assert!(stdout.contains("## Qwen/Qwen3-8B"), "{stdout}");
    let skipped = stdout
        .split("\n## Skipped files\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no Skipped files section: {stdout}"));
    assert!(skipped.contains("5 files under the analysis root not bundled:"));
    for path in &listed {
        assert!(
            skipped.contains(&format!("- `{}`: ", path.display())),
            "{} not listed: {skipped}",
            path.display()
        );
    }
    assert_eq!(
        stderr,
        "llm-triage: warning: 5 files under the analysis root not bundled (listed under \"Skipped files\")\n"
    );
}
