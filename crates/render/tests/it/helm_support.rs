//! Shared helpers for the Helm tests: locating the real helm binary and the shared data, and
//! running our renderer with `helm template`-style arguments.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use fleet_render::helm::{TemplateOptions, ValueOptions};

pub use fleet_testkit::tools::skip;

/// This crate's Helm test data.
pub fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/helm")
}

/// Result of one render: stdout on success, or the stderr text and exit code on failure.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    Ok(String),
    Err(String),
}

/// Renders with our implementation given `helm template`-style arguments (`rel CHART ...`).
/// Relative paths in arguments are resolved against `cwd`.
pub fn ours(args: &[String], cwd: &Path) -> Outcome {
    let mut vo = ValueOptions::default();
    let mut opts = TemplateOptions::default();
    let mut positional = Vec::new();
    let mut i = 0;
    let next = |i: &mut usize| -> String {
        *i += 1;
        args.get(*i).cloned().unwrap_or_default()
    };
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "--set" => vo.values.push(next(&mut i)),
            "--set-string" => vo.string_values.push(next(&mut i)),
            "--set-file" => {
                let v = next(&mut i);
                // Resolve the file part of key=path against cwd.
                let v = match v.split_once('=') {
                    Some((k, p)) => format!("{k}={}", cwd.join(p).display()),
                    None => v,
                };
                vo.file_values.push(v)
            }
            "-f" | "--values" => vo.value_files.push(cwd.join(next(&mut i))),
            "--namespace" | "-n" => opts.namespace = next(&mut i),
            "--kube-version" => opts.kube_version = Some(next(&mut i)),
            "--api-versions" | "-a" => opts.api_versions.push(next(&mut i)),
            "--include-crds" => opts.include_crds = true,
            "--is-upgrade" => opts.is_upgrade = true,
            _ => positional.push(a.to_string()),
        }
        i += 1;
    }
    let (name, chart) = match positional.as_slice() {
        [c] => ("RELEASE-NAME".to_string(), c.clone()),
        [n, c, ..] => (n.clone(), c.clone()),
        [] => return Outcome::Err("Error: \"helm template\" requires at least 1 argument".into()),
    };
    opts.release_name = name;
    let res = vo
        .merge()
        .and_then(|v| fleet_render::helm::template_path(&cwd.join(chart), &v, &opts));
    match res {
        Ok(s) => Outcome::Ok(s),
        Err(e) if e.during_render => Outcome::Err(format!(
            "Error: {}\n\nUse --debug flag to render out invalid YAML\n",
            e.message
        )),
        Err(e) => Outcome::Err(format!("Error: {}\n", e.message)),
    }
}

/// Runs the real helm with `template` + args in `cwd`.
pub fn real(helm: &Path, args: &[String], cwd: &Path) -> Outcome {
    let out = std::process::Command::new(helm)
        .arg("template")
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", helm.display()));
    if out.status.success() {
        Outcome::Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Outcome::Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// A short description of the first difference between two texts.
pub fn first_diff(a: &str, b: &str) -> String {
    let al: Vec<&str> = a.lines().collect();
    let bl: Vec<&str> = b.lines().collect();
    for i in 0..al.len().max(bl.len()) {
        let x = al.get(i).copied().unwrap_or("<EOF>");
        let y = bl.get(i).copied().unwrap_or("<EOF>");
        if x != y {
            let from = i.saturating_sub(3);
            let ctx: Vec<String> = (from..i)
                .map(|j| format!("   {}", al.get(j).unwrap_or(&"")))
                .collect();
            return format!(
                "line {}:\n{}\n - helm: {x:?}\n + ours: {y:?}",
                i + 1,
                ctx.join("\n")
            );
        }
    }
    if a != b {
        return "texts differ only in trailing newline/whitespace".into();
    }
    "identical".into()
}

/// Compares `ours` with helm's output where helm itself is not deterministic (`randAlphaNum`,
/// `uuidv4`, `now`, generated certificates): `a` and `b` are two helm runs; lines on which they
/// differ must only have the same length in ours, every other line must be identical.
pub fn compare_masked(a: &str, b: &str, ours: &str) -> Result<(), String> {
    if a == b {
        return if a == ours {
            Ok(())
        } else {
            Err(first_diff(a, ours))
        };
    }
    let al: Vec<&str> = a.split('\n').collect();
    let bl: Vec<&str> = b.split('\n').collect();
    let ol: Vec<&str> = ours.split('\n').collect();
    if al.len() != bl.len() {
        // Randomness changed the line structure; fall back to exact comparison with run a.
        return if a == ours {
            Ok(())
        } else {
            Err(first_diff(a, ours))
        };
    }
    if ol.len() != al.len() {
        return Err(format!(
            "line count differs: helm {} ours {}\n{}",
            al.len(),
            ol.len(),
            first_diff(a, ours)
        ));
    }
    for i in 0..al.len() {
        let ok = if al[i] == bl[i] {
            ol[i] == al[i]
        } else {
            ol[i].len() == al[i].len()
        };
        if !ok {
            return Err(format!(
                "line {}:\n - helm: {:?}\n + ours: {:?}",
                i + 1,
                al[i],
                ol[i]
            ));
        }
    }
    Ok(())
}
