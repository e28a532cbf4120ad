//! No Docker engine runs here, so docker-compose.yml is checked statically:
//! every service the binary needs is there, every setting whose default only
//! works on a developer machine (127.0.0.1) is overridden, hosts name real
//! services, credentials agree, and Prometheus/Grafana are wired.

use std::collections::{BTreeSet, HashMap};

use serde_yaml::Value;

fn compose_text() -> String {
    std::fs::read_to_string(crate::common::repo_root().join("docker-compose.yml")).unwrap()
}

/// The secrets an operator must set (the top of docker-compose.yml).
const SECRETS: [&str; 4] = ["JWT_SECRET", "POSTGRES_PASSWORD", "MINIO_ROOT_PASSWORD", "GRAFANA_ADMIN_PASSWORD"];

/// Compose's variable interpolation as `docker compose config` does it:
/// `${NAME}`, `${NAME:-default}`, `${NAME:?error}` (an error when NAME is
/// unset or empty). Returns the text, or the errors of every required
/// variable missing.
fn interpolate(text: &str, env: &HashMap<&str, &str>) -> Result<String, Vec<String>> {
    let (mut out, mut errors, mut rest) = (String::new(), Vec::new(), text);
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let end = rest[at..].find('}').expect("closed ${") + at;
        let expr = &rest[at + 2..end];
        let (name, op) = match expr.find([':', '-', '?']) {
            Some(i) => (&expr[..i], &expr[i..]),
            None => (expr, ""),
        };
        let value = env.get(name).copied().filter(|v| !v.is_empty());
        match (value, op) {
            (Some(v), _) => out.push_str(v),
            (None, op) if op.starts_with(":-") => out.push_str(&op[2..]),
            (None, op) if op.starts_with(":?") => errors.push(format!("{name}: {}", &op[2..])),
            (None, _) => {}
        }
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// The file as compose reads it with every secret set.
fn compose() -> Value {
    let env: HashMap<&str, &str> = SECRETS.iter().map(|s| (*s, "an-operator-chosen-value-0123456789abcdef")).collect();
    let text = interpolate(&compose_text(), &env).expect("every variable set");
    serde_yaml::from_str(&text).expect("docker-compose.yml is valid YAML")
}

#[test]
fn compose_refuses_to_start_without_its_secrets_and_publishes_only_the_api() {
    let text = compose_text();
    let errors = interpolate(&text, &HashMap::new()).expect_err("no environment: compose must refuse");
    for secret in SECRETS {
        assert!(errors.iter().any(|e| e.starts_with(&format!("{secret}:"))), "{secret} must be required: {errors:?}");
    }
    // No default secret remains anywhere in the file.
    for old in ["rag-engine-secret", "change-me", "rag:rag@", "POSTGRES_PASSWORD: rag\n"] {
        assert!(!text.contains(old), "docker-compose.yml still holds {old:?}");
    }
    let doc = compose();
    for (name, service) in doc["services"].as_mapping().unwrap() {
        for port in service["ports"].as_sequence().into_iter().flatten() {
            let port = port.as_str().unwrap();
            let public = !port.starts_with("127.0.0.1:");
            assert!(!public || (name.as_str() == Some("rag-engine") && port == "8080"), "{name:?} publishes {port} beyond this host");
        }
    }
    let grafana = env_of(&doc["services"]["grafana"]);
    assert_eq!(grafana["GF_AUTH_ANONYMOUS_ENABLED"], "false");
    assert!(!grafana["GF_SECURITY_ADMIN_PASSWORD"].is_empty());
}

fn env_of(service: &Value) -> HashMap<String, String> {
    let mut out = HashMap::new();
    match &service["environment"] {
        Value::Mapping(m) => {
            for (k, v) in m {
                let v = match v {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    other => panic!("unexpected env value {other:?}"),
                };
                out.insert(k.as_str().unwrap().to_string(), v);
            }
        }
        Value::Sequence(s) => {
            for item in s {
                let (k, v) = item.as_str().unwrap().split_once('=').unwrap();
                out.insert(k.to_string(), v.to_string());
            }
        }
        _ => {}
    }
    out
}

/// `[env: NAME=...] [default: VALUE]` pairs from `rag-engine run --help` (run takes every setting).
fn env_defaults() -> Vec<(String, String)> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rag-engine")).args(["run", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap().replace('\n', " ");
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut pairs = Vec::new();
    for part in help.split("[env: ").skip(1) {
        let name: String = part.chars().take_while(|c| c.is_ascii_uppercase() || *c == '_' || c.is_ascii_digit()).collect();
        let default = part
            .split_once("[default: ")
            .and_then(|(before, after)| (!before.contains("[env: ")).then_some(after))
            .and_then(|a| a.split_once(']'))
            .map(|(d, _)| d.to_string())
            .unwrap_or_default();
        pairs.push((name, default));
    }
    pairs
}

fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let rest = rest.rsplit_once('@').map(|(_, r)| r).unwrap_or(rest);
    rest.split([':', '/']).next().unwrap().to_string()
}

#[test]
fn compose_has_every_service_and_setting_the_binary_needs() {
    let doc = compose();
    let services = doc["services"].as_mapping().expect("services");
    let names: BTreeSet<String> = services.keys().map(|k| k.as_str().unwrap().to_string()).collect();
    for needed in ["kafka", "postgres", "minio", "prometheus", "grafana", "rag-engine", "rag-engine-init"] {
        assert!(names.contains(needed), "docker-compose.yml lacks service {needed}");
    }
    let kafka = &doc["services"]["kafka"];
    let kenv = env_of(kafka);
    assert!(kenv["KAFKA_PROCESS_ROLES"].contains("controller"), "Kafka runs in KRaft mode");
    assert_eq!(kenv["KAFKA_AUTO_CREATE_TOPICS_ENABLE"], "false");
    assert!(doc["services"]["postgres"]["image"].as_str().unwrap().contains("pgvector"));

    let defaults = env_defaults();
    assert!(defaults.len() >= 15, "parsed the --help environment list: {defaults:?}");
    for svc in ["rag-engine", "rag-engine-init"] {
        let env = env_of(&doc["services"][svc]);
        for (name, default) in &defaults {
            if default.contains("127.0.0.1") {
                let v = env.get(name).unwrap_or_else(|| panic!("{svc} must set {name} (its default {default} is local)"));
                assert!(!v.contains("127.0.0.1") && !v.contains("localhost") || name == "METRICS_ADDR", "{svc}: {name}={v}");
            }
        }
        assert_eq!(env["METRICS_ADDR"], "0.0.0.0:9464", "{svc}: metrics must be reachable by Prometheus");
        // Hosts name services of this file.
        for key in ["KAFKA_BROKERS", "DATABASE_URL", "S3_ENDPOINT"] {
            for part in env[key].split(',') {
                let host = host_of(part);
                assert!(names.contains(&host), "{svc}: {key} points at {host}, not a compose service");
            }
        }
        // Credentials agree with the servers.
        let minio = env_of(&doc["services"]["minio"]);
        assert_eq!(env["S3_ACCESS_KEY"], minio["MINIO_ROOT_USER"]);
        assert_eq!(env["S3_SECRET_KEY"], minio["MINIO_ROOT_PASSWORD"]);
        let pg = env_of(&doc["services"]["postgres"]);
        let url = &env["DATABASE_URL"];
        assert!(url.contains(&format!("{}:{}@", pg["POSTGRES_USER"], pg["POSTGRES_PASSWORD"])), "{url}");
        assert!(url.ends_with(&format!("/{}", pg["POSTGRES_DB"])), "{url}");
    }
    let run = doc["services"]["rag-engine"]["command"].as_sequence().unwrap();
    assert_eq!(run[0].as_str(), Some("run"));
    assert_eq!(doc["services"]["rag-engine-init"]["command"][0].as_str(), Some("init"));

    // Prometheus scrapes every rag-engine process on its metrics port.
    let prom_mount = doc["services"]["prometheus"]["volumes"][0].as_str().unwrap();
    let prom_file = prom_mount.split(':').next().unwrap();
    let prom: Value = serde_yaml::from_str(&std::fs::read_to_string(crate::common::repo_root().join(prom_file)).unwrap()).unwrap();
    let sd = &prom["scrape_configs"][0]["dns_sd_configs"][0];
    assert_eq!(sd["names"][0].as_str(), Some("rag-engine"));
    assert_eq!(sd["port"].as_u64(), Some(9464));

    // Grafana is provisioned from dashboards/.
    let mounts: Vec<String> =
        doc["services"]["grafana"]["volumes"].as_sequence().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
    assert!(mounts.iter().any(|m| m.starts_with("./dashboards/provisioning:/etc/grafana/provisioning")));
    assert!(mounts.iter().any(|m| m.starts_with("./dashboards:/var/lib/grafana/dashboards")));
    assert!(crate::common::repo_root().join("dashboards/provisioning/datasources/prometheus.yml").exists());
    assert!(crate::common::repo_root().join("dashboards/provisioning/dashboards/rag-engine.yml").exists());
}

#[test]
fn dashboard_queries_only_metrics_the_code_exports() {
    let text = std::fs::read_to_string(crate::common::repo_root().join("dashboards/rag-engine-stages.json")).unwrap();
    let dash: serde_json::Value = serde_json::from_str(&text).unwrap();
    let panels = dash["panels"].as_array().unwrap();
    assert!(panels[0]["title"].as_str().unwrap().to_lowercase().contains("lag"), "stage lag comes first");
    let known = [
        rag_telemetry::names::EVENTS_IN,
        rag_telemetry::names::EVENTS_OUT,
        rag_telemetry::names::EVENTS_FAILED,
        rag_telemetry::names::EVENTS_DUPLICATE,
        rag_telemetry::names::DEAD_LETTERS,
        rag_telemetry::names::PROCESSING_SECONDS,
        rag_telemetry::names::CONSUMER_LAG,
        rag_telemetry::names::CONSUMER_LAG_SECONDS,
        rag_telemetry::names::CONSUMER_NEXT_OFFSET,
        rag_telemetry::names::REBALANCES,
        rag_telemetry::names::OFFSET_GAPS,
        rag_telemetry::names::STUCK,
        rag_telemetry::names::DLQ_MESSAGES,
        rag_telemetry::names::UPLOAD_TO_INGESTED_SECONDS,
        rag_telemetry::names::QUESTION_TO_ANSWER_SECONDS,
        rag_telemetry::names::LLM_TOKENS,
        rag_telemetry::names::HTTP_REQUESTS,
        rag_telemetry::names::HTTP_SECONDS,
        rag_telemetry::names::SOURCE_FILES,
        rag_telemetry::names::SOURCE_SYNC_AGE,
    ];
    for p in panels {
        for target in p["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                if word.starts_with("rag_") {
                    let base = word.trim_end_matches("_bucket").trim_end_matches("_sum").trim_end_matches("_count");
                    assert!(known.contains(&base), "dashboard queries {word}, which the code does not export");
                }
            }
        }
    }
}

/// The variables `rag-engine COMMAND --help` lists.
fn env_names_of(command: &[&str]) -> BTreeSet<String> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rag-engine")).args(command).arg("--help").output().unwrap();
    assert!(out.status.success(), "{command:?} --help");
    let help = String::from_utf8(out.stdout).unwrap();
    help.split("[env: ")
        .skip(1)
        .map(|part| part.chars().take_while(|c| c.is_ascii_uppercase() || *c == '_' || c.is_ascii_digit()).collect())
        .collect()
}

#[test]
fn each_command_lists_only_the_settings_it_reads() {
    let run = env_names_of(&["run"]);
    assert!(run.len() >= 100, "run takes every setting: {run:?}");
    let token = env_names_of(&["token"]);
    assert_eq!(token, ["JWT_AUDIENCE", "JWT_MAX_TTL_SECS", "JWT_SECRET", "LOG_FORMAT"].map(String::from).into(), "token");
    let migrate = env_names_of(&["migrate"]);
    assert!(migrate.contains("DATABASE_URL") && !migrate.iter().any(|n| n.starts_with("KAFKA_") || n.starts_with("S3_")), "{migrate:?}");
    let search = env_names_of(&["search"]);
    assert!(search.contains("EMBEDDER") && search.contains("RETRIEVAL_TOP_K") && search.contains("DATABASE_URL"), "{search:?}");
    assert!(!search.iter().any(|n| n.starts_with("KAFKA_") || n.starts_with("STAGE_") || n.starts_with("API_")), "{search:?}");
    let upload = env_names_of(&["upload"]);
    assert!(upload.contains("UPLOAD_MAX_BYTES") && upload.contains("S3_BUCKET") && upload.contains("KAFKA_BROKERS"), "{upload:?}");
    assert!(!upload.iter().any(|n| n.starts_with("ANSWER_") || n.starts_with("EMBEDDING_")), "{upload:?}");
    // Every variable some command reads is one `run` reads.
    for command in [&token, &migrate, &search, &upload] {
        assert!(command.is_subset(&run), "{:?}", command.difference(&run).collect::<Vec<_>>());
    }
}

/// The words of a README command line: `cargo run [-q] --bin BIN -- ARGS`
/// with its comment, `&` and `)` dropped, quotes honoured, and each optional
/// `[...]` taken with its first alternative (`[--mode lexical|dense]` ->
/// `--mode lexical`), so every flag the README shows is exercised; an upper
/// case placeholder becomes a uuid.
fn readme_command(line: &str) -> Option<(String, Vec<String>)> {
    let rest = line.split_once("cargo run ")?.1;
    let rest = rest.split_once(" # ").map_or(rest, |(c, _)| c).trim().trim_end_matches('&').trim_end_matches(')').trim();
    let (bin, args) = rest.trim_start_matches("-q ").strip_prefix("--bin ")?.split_once(" -- ")?;
    let mut words = Vec::new();
    let (mut word, mut quoted, mut any) = (String::new(), false, false);
    for c in args.replace(['[', ']'], " ").chars() {
        match c {
            '"' => (quoted, any) = (!quoted, true),
            ' ' if !quoted => {
                if any || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                any = false;
            }
            c => word.push(c),
        }
    }
    if any || !word.is_empty() {
        words.push(word);
    }
    // A placeholder (`ID`, `C`: upper case) stands for an id: a uuid.
    let placeholder = |w: &str| w.len() <= 4 && w.chars().all(|c| c.is_ascii_uppercase());
    let words = words.into_iter().map(|w| match w {
        w if w.starts_with('-') => w,
        w if placeholder(&w) => uuid::Uuid::nil().to_string(),
        w => w.split('|').next().unwrap_or_default().to_string(),
    });
    Some((bin.trim().to_string(), words.collect()))
}

#[test]
fn every_readme_command_parses() {
    let readme = std::fs::read_to_string(crate::common::repo_root().join("README.md")).unwrap();
    let engine = std::path::Path::new(env!("CARGO_BIN_EXE_rag-engine"));
    let commands: Vec<_> = readme.lines().filter_map(readme_command).collect();
    assert!(commands.len() >= 15, "read the README's commands: {commands:?}");
    for (bin, args) in commands {
        let exe = engine.with_file_name(&bin);
        assert!(exe.exists(), "README runs {bin}, which the workspace does not build");
        // `--help` last: clap checks every word before it (the command
        // path, each flag and its value) and then prints instead of running.
        let out = std::process::Command::new(&exe).args(&args).arg("--help").output().unwrap();
        assert!(out.status.success(), "README: {bin} {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    }
}
