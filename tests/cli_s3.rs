//! S3 end to end through Debian's stock `ncgen`, `ncdump` and `nccopy` with the library
//! preloaded, against s3s-fs (checks SigV4 signatures) and moto, both on loopback.
//!
//! What libnetcdf 4.9.0 does to the URL before our `open` sees it is checked here too: `s3://`
//! and `http://host:port/...` arrive as `https://` path-style URLs, so the endpoint comes from
//! `AWS_ENDPOINT_URL` (or the `aws.endpoint` fragment key), which wins over the rewritten host.

mod common;

use common::credential_service;
use common::s3::{
    ACCESS_KEY, BUCKET, CountingProxy, FakeServer, Kind, Misbehaviour, Request, SECRET_KEY, Server,
    Trap,
};
use common::{Host, Report, Run, case_name, cdl_files, dump, run_env, scratch, url};
use std::fs;
use std::path::Path;

/// Every AWS (and netCDF rc file) variable a developer's shell might carry; each run starts
/// without them.
const AWS_VARS: [&str; 24] = [
    "AWS_ENDPOINT_URL_SSO",
    "NCRCENV_HOME",
    "NCRCENV_RC",
    "NCRCENV_IGNORE",
    "AWS_PROFILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_ENDPOINT_URL_STS",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "NCZARR_RS_S3_TIMEOUT",
];

/// Extra environment of one case.
type Vars<'a> = Vec<(&'a str, &'a str)>;

/// A clean AWS environment with `HOME` pointing at an empty directory, plus `extra`. The EC2
/// metadata service is not asked, and no netCDF rc file is read, unless `extra` says so (the
/// machine running the tests may be an EC2 instance, its directories may hold a `.ncrc`).
fn env_with<'a>(home: &'a Path, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, Option<&'a str>)> {
    let mut env: Vec<(&str, Option<&str>)> = AWS_VARS.iter().map(|v| (*v, None)).collect();
    env.push(("AWS_EC2_METADATA_DISABLED", Some("true")));
    env.push(("NCRCENV_RC", Some("/dev/null")));
    env.push(("HOME", Some(home.to_str().unwrap())));
    env.extend(extra.iter().map(|(k, v)| (*k, Some(*v))));
    env
}

fn tool(program: &str, args: &[&str], env: &[(&str, Option<&str>)]) -> Run {
    run_env(Host::Ours, program, args, env)
}

fn ncdump_ok(target: &str, env: &[(&str, Option<&str>)]) -> Result<String, String> {
    tool("ncdump", &[target], env)
        .output()
        .map(|d| dump::normalise_name(&d))
}

/// `ncgen` into S3 and `ncdump` back give exactly what the same CDL gives on a directory store.
fn corpus_round_trip(kind: Kind, cases: &[std::path::PathBuf]) {
    let server = Server::start(kind);
    let dir = scratch("s3-corpus");
    let endpoint = server.endpoint();
    let env = env_with(
        dir.path(),
        &[
            ("AWS_ENDPOINT_URL", &endpoint),
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
        ],
    );
    let mut report = Report::new(&format!("corpus on {kind:?}"));
    for cdl in cases {
        let name = case_name(cdl);
        let file_store = url(&dir.path().join(format!("{name}.zarr")), "nczarr,file");
        let s3 = format!("s3://{BUCKET}/corpus/{name}#mode=nczarr,s3");
        let outcome = (|| {
            let cdl = cdl.to_str().unwrap();
            tool("ncgen", &["-4", "-o", &file_store, cdl], &env).output()?;
            tool("ncgen", &["-4", "-o", &s3, cdl], &env).output()?;
            let want = ncdump_ok(&file_store, &env)?;
            let got = ncdump_ok(&s3, &env)?;
            match common::diff::diff(&want, &got) {
                None => Ok(()),
                Some(d) => Err(format!("(- file store, + S3)\n{d}")),
            }
        })();
        report.case(&name, outcome);
    }
    assert!(!cases.is_empty(), "no CDL files");
    report.finish(cases.len());
}

#[test]
fn corpus_through_s3s_fs_equals_the_file_store() {
    corpus_round_trip(Kind::S3sFs, &cdl_files());
}

#[test]
fn compound_types_through_s3s_fs_equal_the_file_store() {
    let dir = common::repo_root().join("tests/cdl_compound");
    let cases: Vec<_> = ["compound", "nested_arrays"]
        .iter()
        .map(|name| dir.join(format!("{name}.cdl")))
        .collect();
    corpus_round_trip(Kind::S3sFs, &cases);
}

#[test]
fn enum_types_through_s3s_fs_equal_the_file_store() {
    let dir = common::repo_root().join("tests/cdl_enum");
    let cases: Vec<_> = ["enum", "compound_enum"]
        .iter()
        .map(|name| dir.join(format!("{name}.cdl")))
        .collect();
    corpus_round_trip(Kind::S3sFs, &cases);
}

#[test]
fn opaque_types_through_s3s_fs_equal_the_file_store() {
    let dir = common::repo_root().join("tests/cdl_opaque");
    let cases: Vec<_> = ["opaque", "compound_opaque"]
        .iter()
        .map(|name| dir.join(format!("{name}.cdl")))
        .collect();
    corpus_round_trip(Kind::S3sFs, &cases);
}

#[test]
fn vlen_types_through_s3s_fs_equal_the_file_store() {
    let dir = common::repo_root().join("tests/cdl_vlen");
    let cases: Vec<_> = ["vlen", "vlen_atts"]
        .iter()
        .map(|name| dir.join(format!("{name}.cdl")))
        .collect();
    corpus_round_trip(Kind::S3sFs, &cases);
}

#[test]
fn corpus_through_moto_equals_the_file_store() {
    let some: Vec<_> = cdl_files()
        .into_iter()
        .filter(|p| {
            ["atomic_vars", "groups", "strings", "unlimited"].contains(&case_name(p).as_str())
        })
        .collect();
    assert_eq!(
        some.len(),
        4,
        "the moto subset of the corpus is missing files"
    );
    corpus_round_trip(Kind::Moto, &some);
}

/// A small variable `v` of 40 chunks, and a deflated variable `w` of four 96 KiB chunks side
/// by side along its rows (so a row read takes all four, and their stored size is over what a
/// zip store holds in memory until the flush).
fn sample_cdl(dir: &Path) -> std::path::PathBuf {
    let cdl = dir.join("sample.cdl");
    let values: Vec<String> = (0..160).map(|i| i.to_string()).collect();
    let noisy: Vec<String> = (0..6 * 64 * 256u64)
        .map(|i| format!("{}.{}", (i * 7919) % 10007, (i * 104_729) % 997))
        .collect();
    fs::write(
        &cdl,
        format!(
            "netcdf sample {{\ndimensions:\n  x = 40 ;\n  y = 4 ;\n  t = 6 ;\n  r = 64 ;\n  \
             c = 256 ;\nvariables:\n  int v(x, y) ;\n    \
             v:_ChunkSizes = 1, 4 ;\n    v:units = \"m\" ;\n  float w(t, r, c) ;\n    \
             w:_ChunkSizes = 6, 64, 64 ;\n    w:_DeflateLevel = 1 ;\ndata:\n  v = {} ;\n  \
             w = {} ;\n}}\n",
            values.join(", "),
            noisy.join(", ")
        ),
    )
    .unwrap();
    cdl
}

/// The URL our `open` receives is libnetcdf's rewrite, and the endpoint override wins over it.
#[test]
fn libnetcdf_rewrites_the_url_and_the_endpoint_override_wins() {
    let server = Server::start(Kind::S3sFs);
    let dir = scratch("s3-rewrite");
    let cdl = sample_cdl(dir.path());
    let endpoint = server.endpoint();
    let keys = [
        ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
        ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
        ("NCZARR_RS_DEBUG", "1"),
        ("NCZARR_RS_S3_TIMEOUT", "3"),
    ];
    let with_endpoint = [keys.as_slice(), &[("AWS_ENDPOINT_URL", endpoint.as_str())]].concat();
    let env = env_with(dir.path(), &with_endpoint);

    let s3 = format!("s3://{BUCKET}/rewrite/a#mode=nczarr,s3");
    let r = tool("ncgen", &["-4", "-o", &s3, cdl.to_str().unwrap()], &env);
    assert!(r.success(), "{}", r.describe());
    let seen = format!("https://s3.us-east-1.amazonaws.com/{BUCKET}/rewrite/a#mode=");
    assert!(r.stderr.contains(&seen), "{}", r.stderr);

    let http = format!(
        "http://127.0.0.1:{}/{BUCKET}/rewrite/a#mode=nczarr,s3",
        server.port
    );
    let r = tool("ncdump", &["-h", &http], &env);
    assert!(r.success(), "{}", r.describe());
    let seen = format!("https://127.0.0.1:{}/{BUCKET}/rewrite/a#mode=", server.port);
    assert!(r.stderr.contains(&seen), "{}", r.stderr);

    // `#mode=zarr`, on which 4.9.0's mode inference never ended, reads what `mode=zarr,s3`
    // reads (under an address-space limit, so a regression fails instead of exhausting memory).
    let looping = format!("s3://{BUCKET}/rewrite/a#mode=zarr");
    let r = tool(
        "prlimit",
        &["--as=4294967296", "ncdump", "-h", &looping],
        &env,
    );
    let explicit = format!("s3://{BUCKET}/rewrite/a#mode=zarr,s3");
    let want = tool("ncdump", &["-h", &explicit], &env).output().unwrap();
    assert!(r.success(), "{}", r.describe());
    assert_eq!(r.stdout, want);

    // Without the override the rewritten https:// URL cannot reach a plain-http server: an
    // error, quickly, not a hang.
    let r = tool("ncdump", &["-h", &http], &env_with(dir.path(), &keys));
    assert!(!r.success() && !r.crashed(), "{}", r.describe());

    // The fragment key survives the rewrite and beats the environment.
    let frag = format!("{http}&aws.endpoint={endpoint}");
    let wrong = [
        keys.as_slice(),
        &[("AWS_ENDPOINT_URL", "http://127.0.0.1:1")],
    ]
    .concat();
    let r = tool("ncdump", &["-h", &frag], &env_with(dir.path(), &wrong));
    assert!(r.success(), "{}", r.describe());
    assert!(r.stderr.contains("aws.endpoint="), "{}", r.stderr);

    // AWS_ENDPOINT_URL_S3 beats AWS_ENDPOINT_URL.
    let both = [
        wrong.as_slice(),
        &[("AWS_ENDPOINT_URL_S3", endpoint.as_str())],
    ]
    .concat();
    let r = tool("ncdump", &["-h", &s3], &env_with(dir.path(), &both));
    assert!(r.success(), "{}", r.describe());
}

/// Each credential source, checked by s3s-fs's signature verification.
#[test]
fn every_credential_source_reaches_a_signing_server() {
    let server = Server::start(Kind::S3sFs);
    let dir = scratch("s3-creds");
    let cdl = sample_cdl(dir.path());
    let endpoint = server.endpoint();
    let base = [
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("NCZARR_RS_S3_TIMEOUT", "5"),
    ];
    let s3 = format!("s3://{BUCKET}/creds/a#mode=nczarr,s3");
    let env_keys = [
        base.as_slice(),
        &[
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
        ],
    ]
    .concat();
    let r = tool(
        "ncgen",
        &["-4", "-o", &s3, cdl.to_str().unwrap()],
        &env_with(dir.path(), &env_keys),
    );
    assert!(r.success(), "{}", r.describe());
    let want = ncdump_ok(&s3, &env_with(dir.path(), &env_keys)).unwrap();

    let good = format!("aws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n");
    let bad = "aws_access_key_id = nczarr-test\naws_secret_access_key = wrong\n";
    let home = dir.path().join("home");
    fs::create_dir_all(home.join(".aws")).unwrap();
    fs::write(
        home.join(".aws/credentials"),
        format!("[default]\n{good}[bad]\n{bad}"),
    )
    .unwrap();
    fs::write(
        home.join(".aws/config"),
        format!("[default]\nregion = eu-west-1\n[profile cfg]\n{good}"),
    )
    .unwrap();
    let other = dir.path().join("elsewhere");
    fs::write(&other, format!("[tester]\n{good}")).unwrap();
    let other_cfg = dir.path().join("elsewhere-config");
    fs::write(&other_cfg, format!("[profile fromconfig]\n{good}")).unwrap();
    let (other, other_cfg) = (other.to_str().unwrap(), other_cfg.to_str().unwrap());
    let ncrc = dir.path().join("ncrc");
    fs::write(
        &ncrc,
        "AWS.PROFILE=cfg\n[s3://nczarr/elsewhere]AWS.PROFILE=bad\n",
    )
    .unwrap();
    let scoped_ncrc = dir.path().join("scoped-ncrc");
    fs::write(
        &scoped_ncrc,
        "AWS.PROFILE=cfg\n[s3://nczarr/creds]AWS.PROFILE=bad\n",
    )
    .unwrap();
    let (ncrc, scoped_ncrc) = (ncrc.to_str().unwrap(), scoped_ncrc.to_str().unwrap());

    let cases: Vec<(&str, String, &Path, Vars)> = vec![
        (
            "default profile in ~/.aws/credentials",
            s3.clone(),
            &home,
            vec![],
        ),
        (
            "AWS_PROFILE in AWS_SHARED_CREDENTIALS_FILE",
            s3.clone(),
            dir.path(),
            vec![
                ("AWS_PROFILE", "tester"),
                ("AWS_SHARED_CREDENTIALS_FILE", other),
            ],
        ),
        (
            "aws.profile fragment in AWS_CONFIG_FILE",
            format!("{s3}&aws.profile=fromconfig"),
            dir.path(),
            vec![("AWS_CONFIG_FILE", other_cfg)],
        ),
        (
            "aws.profile fragment beats a wrong environment",
            format!("{s3}&aws.profile=cfg"),
            &home,
            vec![("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "y")],
        ),
        (
            "AWS.PROFILE in netCDF's rc file beats AWS_PROFILE",
            s3.clone(),
            &home,
            vec![("AWS_PROFILE", "bad"), ("NCRCENV_RC", ncrc)],
        ),
        (
            "environment keys beat AWS_PROFILE",
            s3.clone(),
            &home,
            vec![
                ("AWS_PROFILE", "bad"),
                ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
                ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
            ],
        ),
    ];
    for (what, target, home, extra) in &cases {
        let all = [base.as_slice(), extra.as_slice()].concat();
        let got = ncdump_ok(target, &env_with(home, &all));
        assert_eq!(got.as_ref(), Ok(&want), "{what}");
    }

    let refused: Vec<(&str, String, Vars)> = vec![
        (
            "wrong secret in the environment",
            s3.clone(),
            vec![
                ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
                ("AWS_SECRET_ACCESS_KEY", "wrong"),
            ],
        ),
        (
            "wrong secret in a profile",
            s3.clone(),
            vec![("AWS_PROFILE", "bad")],
        ),
        (
            "an rc file entry scoped to the dataset beats the unscoped one",
            s3.clone(),
            vec![("NCRCENV_RC", scoped_ncrc)],
        ),
        (
            "anonymous (profile none)",
            format!("{s3}&aws.profile=none"),
            vec![],
        ),
    ];
    for (what, target, extra) in &refused {
        let all = [base.as_slice(), extra.as_slice()].concat();
        let r = tool("ncdump", &["-h", target], &env_with(&home, &all));
        assert!(!r.success() && !r.crashed(), "{what}: {}", r.describe());
        assert!(
            r.stderr.contains("Authorization failure"),
            "{what}: {}",
            r.describe()
        );
    }
}

/// The sample on s3s-fs (which checks signatures), written with keys from the environment, and
/// read back by stock `ncdump` with credentials from elsewhere.
struct SampleForCredentials {
    server: Server,
    dir: tempfile::TempDir,
    target: String,
    want: String,
}

impl SampleForCredentials {
    fn start(stem: &str) -> SampleForCredentials {
        let server = Server::start(Kind::S3sFs);
        let dir = scratch(stem);
        let cdl = sample_cdl(dir.path());
        let target = format!("s3://{BUCKET}/{stem}/a#mode=nczarr,s3");
        let endpoint = server.endpoint();
        let keys = [
            ("AWS_ENDPOINT_URL", endpoint.as_str()),
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
        ];
        let env = env_with(dir.path(), &keys);
        let r = tool("ncgen", &["-4", "-o", &target, cdl.to_str().unwrap()], &env);
        assert!(r.success(), "{}", r.describe());
        let want = ncdump_ok(&target, &env).unwrap();
        SampleForCredentials {
            server,
            dir,
            target,
            want,
        }
    }

    /// `ncdump OPTS` of the sample with no keys, the server's endpoint and `extra`.
    fn dump(&self, opts: &[&str], extra: &[(&str, &str)]) -> Run {
        let endpoint = self.server.endpoint();
        let base = [
            ("AWS_ENDPOINT_URL", endpoint.as_str()),
            ("NCZARR_RS_S3_TIMEOUT", "5"),
        ];
        let all = [base.as_slice(), extra].concat();
        let args: Vec<&str> = opts.iter().copied().chain([self.target.as_str()]).collect();
        tool("ncdump", &args, &env_with(self.dir.path(), &all))
    }

    /// The whole sample read with `extra` equals what was written.
    fn reads(&self, extra: &[(&str, &str)], what: &str) {
        let got = self.dump(&[], extra).output();
        let got = got.map(|d| dump::normalise_name(&d));
        assert_eq!(got.as_ref(), Ok(&self.want), "{what}");
    }

    /// With `extra`, `ncdump -h` fails with an authorization failure whose message has `why`.
    fn refused(&self, extra: &[(&str, &str)], why: &str) {
        let r = self.dump(&["-h"], extra);
        assert!(
            r.refused_saying("Authorization failure"),
            "{}",
            r.describe()
        );
        assert!(r.stderr.contains(why), "{why:?} in {}", r.describe());
    }
}

/// The keys s3s-fs accepts (or, with another secret, refuses) as a credential service serves
/// them.
fn served_keys(secret: &str) -> credential_service::Keys {
    credential_service::Keys {
        access_key_id: ACCESS_KEY.into(),
        secret_access_key: secret.into(),
        session_token: "served-session-token".into(),
    }
}

/// A fake instance metadata service whose instance has `role`, with the keys for `secret`.
fn metadata_service(role: Option<(&str, &str)>) -> credential_service::CredentialService {
    credential_service::CredentialService::start(credential_service::Answers {
        role: role.map(|(name, secret)| (name.to_string(), served_keys(secret))),
        container: None,
        sso: None,
        expired_once: false,
    })
}

/// The environment that has the instance metadata service at `endpoint` asked.
fn on_an_instance(endpoint: &str) -> [(&str, &str); 2] {
    [
        ("AWS_EC2_METADATA_DISABLED", "false"),
        ("AWS_EC2_METADATA_SERVICE_ENDPOINT", endpoint),
    ]
}

/// Keys of the instance's role from the EC2 metadata service (IMDSv2) sign the requests of
/// stock `ncdump`, fetched once; an instance without a role, or a metadata service that never
/// answers, reads anonymously (soon); a disabled metadata service is never asked.
#[test]
fn keys_from_the_instance_metadata_service_are_used() {
    use credential_service::SESSION_TOKEN;
    let sample = SampleForCredentials::start("instance-role");
    let role = "nczarr-reader";
    let instance = metadata_service(Some((role, SECRET_KEY)));
    let metadata = instance.endpoint();
    sample.reads(&on_an_instance(&metadata), "instance role");
    let asked: Vec<(String, String, Option<String>)> = instance
        .take()
        .into_iter()
        .map(|s| (s.method, s.path, s.metadata_token))
        .collect();
    let token = Some(SESSION_TOKEN.to_string());
    let roles = "/latest/meta-data/iam/security-credentials/";
    assert_eq!(
        asked,
        vec![
            ("PUT".into(), "/latest/api/token".into(), None),
            ("GET".into(), roles.into(), token.clone()),
            ("GET".into(), format!("{roles}{role}"), token),
        ],
        "a session token, the role's name, its keys: once for the whole dump"
    );

    let wrong = metadata_service(Some((role, "wrong")));
    let wrong_metadata = wrong.endpoint();
    sample.refused(&on_an_instance(&wrong_metadata), "SignatureDoesNotMatch");

    let roleless = metadata_service(None);
    let roleless_metadata = roleless.endpoint();
    sample.refused(
        &on_an_instance(&roleless_metadata),
        "anonymous (no instance role",
    );
    assert!(
        roleless.take().iter().any(|s| s.path == roles),
        "the role was asked for"
    );

    sample.refused(
        &[("AWS_EC2_METADATA_SERVICE_ENDPOINT", &metadata)],
        "anonymous",
    );
    assert!(
        instance.take().is_empty(),
        "AWS_EC2_METADATA_DISABLED=true: the metadata service is not asked"
    );

    let silent = FakeServer::start(Misbehaviour::Silent);
    let silent_metadata = silent.endpoint();
    let started = std::time::Instant::now();
    let long_timeout = [
        [("NCZARR_RS_S3_TIMEOUT", "60")].as_slice(),
        &on_an_instance(&silent_metadata),
    ]
    .concat();
    sample.refused(&long_timeout, "anonymous (no instance role");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "a metadata service that never answers is given up on well before the 60 s timeout: {:?}",
        started.elapsed()
    );
}

/// The environment of a container whose credential agent answers at `url`, with the
/// authorization token in `token_file`.
fn agent_env<'a>(url: &'a str, token_file: &'a str) -> [(&'static str, &'a str); 2] {
    [
        ("AWS_CONTAINER_CREDENTIALS_FULL_URI", url),
        ("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", token_file),
    ]
}

/// Keys from a container's credential agent (EKS Pod Identity: a full URL and a token file)
/// sign the requests of stock `ncdump`, fetched once with the token; an agent that refuses the
/// token fails the open, and keys that expire and cannot be renewed fail the read, both as
/// authorization failures.
#[test]
fn keys_from_a_container_agent_are_used() {
    use credential_service::{Answers, CONTAINER_PATH, CredentialService};
    let sample = SampleForCredentials::start("container-agent");
    let agent_token = "agent-authorization-token";
    let agent = |expired_once| {
        CredentialService::start(Answers {
            role: None,
            container: Some((agent_token.into(), served_keys(SECRET_KEY))),
            sso: None,
            expired_once,
        })
    };
    let token_file = sample.dir.path().join("agent-token");
    fs::write(&token_file, agent_token).unwrap();
    let stale_file = sample.dir.path().join("stale-token");
    fs::write(&stale_file, "stale").unwrap();
    let (token_file, stale_file) = (token_file.to_str().unwrap(), stale_file.to_str().unwrap());

    let steady = agent(false);
    let url = format!("{}{CONTAINER_PATH}", steady.endpoint());
    sample.reads(&agent_env(&url, token_file), "container agent");
    let asked: Vec<(String, Option<String>)> = steady
        .take()
        .into_iter()
        .map(|s| (s.path, s.authorization))
        .collect();
    assert_eq!(
        asked,
        vec![(CONTAINER_PATH.to_string(), Some(agent_token.to_string()))]
    );
    sample.refused(&agent_env(&url, stale_file), "container credentials");

    let vanishing = agent(true);
    let url = format!("{}{CONTAINER_PATH}", vanishing.endpoint());
    sample.refused(&agent_env(&url, token_file), "container credentials");
    assert!(
        vanishing.take().len() > 1,
        "the expired keys were asked for again"
    );
}

/// Keys printed by a profile's `credential_process` sign the requests of stock `ncdump`: the
/// command runs once while its keys are fresh and again once they have expired; a command that
/// fails is an authorization failure carrying what it said.
#[test]
fn keys_printed_by_a_credential_process_are_used() {
    let sample = SampleForCredentials::start("credential-process");
    let dir = sample.dir.path();
    let runs = dir.join("runs");
    let script = dir.join("print-keys.sh");
    fs::write(
        &script,
        format!(
            "echo run >> '{}'\n\
             [ \"$1\" = refuse ] && {{ echo 'session expired: log in again' >&2; exit 2; }}\n\
             printf '{{\"Version\": 1, \"AccessKeyId\": \"{ACCESS_KEY}\", \
             \"SecretAccessKey\": \"{SECRET_KEY}\", \"SessionToken\": \"t\", \
             \"Expiration\": \"%s-01-01T00:00:00Z\"}}' \"$1\"\n",
            runs.display()
        ),
    )
    .unwrap();
    let config = dir.join("aws-config");
    fs::write(
        &config,
        format!(
            "[profile fresh]\ncredential_process = sh {0} 2099\n\
             [profile expired]\ncredential_process = sh {0} 2020\n\
             [profile refused]\ncredential_process = sh {0} refuse\n",
            script.display()
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let runs_so_far = || {
        let n = fs::read_to_string(&runs).map_or(0, |t| t.lines().count());
        let _ = fs::remove_file(&runs);
        n
    };
    let profile = |name| [("AWS_CONFIG_FILE", config), ("AWS_PROFILE", name)];

    sample.reads(&profile("fresh"), "credential_process");
    assert_eq!(runs_so_far(), 1, "fresh keys: one run for the whole dump");
    sample.reads(&profile("expired"), "expired credential_process keys");
    assert!(runs_so_far() > 1, "expired keys are asked for again");
    sample.refused(&profile("refused"), "session expired: log in again");
}

/// The keys of a single sign-on role, asked of the portal with the token `aws sso login`
/// cached, sign the requests of stock `ncdump`; an expired token asks for a new login, and a
/// token the portal refuses is an authorization failure carrying its answer.
#[test]
fn keys_of_a_single_sign_on_role_are_used() {
    use credential_service::{Answers, CredentialService, SsoRole};
    let sample = SampleForCredentials::start("single-sign-on");
    let portal = CredentialService::start(Answers {
        role: None,
        container: None,
        sso: Some(SsoRole {
            bearer: "signed-on".into(),
            account_id: "111122223333".into(),
            role_name: "Reader".into(),
            keys: served_keys(SECRET_KEY),
        }),
        expired_once: false,
    });
    let home = sample.dir.path().join("sso-home");
    let cache = home.join(".aws/sso/cache");
    fs::create_dir_all(&cache).unwrap();
    let config = home.join(".aws/config");
    fs::write(
        &config,
        "[profile reader]\nsso_session = corp\nsso_account_id = 111122223333\n\
         sso_role_name = Reader\n[sso-session corp]\nsso_region = eu-central-1\n\
         sso_start_url = https://corp.awsapps.com/start\n",
    )
    .unwrap();
    // The AWS tools name the cache file by the SHA-1 of the session's name, here "corp".
    let token = cache.join("ee0bfd2552fbd840c02cc48b6e823320543c450f.json");
    let cached = |bearer: &str, expires: &str| {
        fs::write(
            &token,
            format!(r#"{{"startUrl":"https://corp.awsapps.com/start","region":"eu-central-1","accessToken":"{bearer}","expiresAt":"{expires}"}}"#),
        )
        .unwrap();
    };
    let endpoint = portal.endpoint();
    let env = [
        ("HOME", home.to_str().unwrap()),
        ("AWS_PROFILE", "reader"),
        ("AWS_ENDPOINT_URL_SSO", endpoint.as_str()),
    ];

    cached("signed-on", "2099-01-01T00:00:00Z");
    sample.reads(&env, "single sign-on");
    let asked: Vec<(String, Option<String>)> = portal
        .take()
        .into_iter()
        .map(|s| (s.path, s.sso_bearer))
        .collect();
    assert_eq!(
        asked,
        vec![(
            "/federation/credentials?role_name=Reader&account_id=111122223333".to_string(),
            Some("signed-on".to_string())
        )],
        "one request for the whole dump"
    );

    cached("signed-on", "2020-01-01T00:00:00Z");
    sample.refused(&env, "aws sso login");
    assert!(portal.take().is_empty(), "an expired token is not sent");
    cached("stale", "2099-01-01T00:00:00Z");
    sample.refused(&env, "Session token not found or invalid");
}

/// The role the fake STS grants.
const STS_ROLE: &str = "arn:aws:iam::123456789012:role/nczarr-reader";

/// A fake STS, its files in the sample's directory, granting [`STS_ROLE`] (with the keys
/// s3s-fs accepts) to the web identity `token`, or to requests signed with `source_key_id`.
fn fake_sts(
    sample: &SampleForCredentials,
    token: &str,
    source_key_id: Option<&str>,
) -> credential_service::FakeSts {
    let dir = sample.dir.path().join("sts");
    fs::create_dir(&dir).unwrap();
    credential_service::FakeSts::start(
        &dir,
        STS_ROLE,
        token,
        &served_keys(SECRET_KEY),
        source_key_id,
    )
}

/// A profile's role assumed with another profile's keys (`role_arn` + `source_profile`): STS
/// is asked once, with a request signed by the source profile's key, and the role's keys sign
/// the requests of stock `ncdump` (the source's own keys would be refused by s3s-fs); a role
/// STS refuses is an authorization failure carrying its answer.
#[test]
fn a_role_assumed_with_another_profiles_keys_is_used() {
    let sample = SampleForCredentials::start("assumed-role");
    let role = STS_ROLE;
    let sts = fake_sts(&sample, "unused-token", Some("SOURCEKEY"));
    let (sts_endpoint, certificate) = (sts.endpoint(), sts.certificate());
    let config = sample.dir.path().join("aws-config");
    fs::write(
        &config,
        format!(
            "[profile base]\naws_access_key_id = SOURCEKEY\naws_secret_access_key = source-secret\n\
             [profile reader]\nrole_arn = {role}\nsource_profile = base\n\
             role_session_name = nczarr-test\n\
             [profile other-role]\nrole_arn = arn:aws:iam::123456789012:role/other\n\
             source_profile = base\n"
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let env = |profile| {
        [
            ("AWS_CONFIG_FILE", config),
            ("AWS_PROFILE", profile),
            ("AWS_ENDPOINT_URL_STS", sts_endpoint.as_str()),
            ("SSL_CERT_FILE", certificate.to_str().unwrap()),
        ]
    };
    sample.reads(&env("reader"), "assumed role");
    let asked = sts.requests();
    assert_eq!(
        asked.len(),
        1,
        "one AssumeRole for the whole dump: {asked:?}"
    );
    for part in [
        r#""Action": "AssumeRole""#,
        r#""RoleSessionName": "nczarr-test""#,
        r#""SignedWith": "SOURCEKEY""#,
    ] {
        assert!(asked[0].contains(part), "{part} in {}", asked[0]);
    }
    sample.refused(&env("other-role"), "AccessDenied");
}

/// A web identity token (as EKS mounts a service account's) is exchanged with STS, over HTTPS,
/// for the role's keys, which reach s3s-fs through stock `ncdump`; a token STS refuses is an
/// authorization failure that names the source.
#[test]
fn a_web_identity_token_is_exchanged_with_sts_for_keys() {
    let sample = SampleForCredentials::start("web-identity");
    let role = STS_ROLE;
    let sts = fake_sts(&sample, "pod-token", None);
    let (sts_endpoint, certificate) = (sts.endpoint(), sts.certificate());
    let token_file = sample.dir.path().join("token");
    let env = [
        ("AWS_WEB_IDENTITY_TOKEN_FILE", token_file.to_str().unwrap()),
        ("AWS_ROLE_ARN", role),
        ("AWS_ROLE_SESSION_NAME", "nczarr-test-session"),
        ("AWS_ENDPOINT_URL_STS", sts_endpoint.as_str()),
        ("SSL_CERT_FILE", certificate.to_str().unwrap()),
    ];

    fs::write(&token_file, "pod-token").unwrap();
    sample.reads(&env, "web identity");
    let asked = sts.requests();
    assert_eq!(asked.len(), 1, "one exchange for the whole dump: {asked:?}");
    for part in [
        r#""Action": "AssumeRoleWithWebIdentity""#,
        r#""WebIdentityToken": "pod-token""#,
        r#""RoleSessionName": "nczarr-test-session""#,
    ] {
        assert!(asked[0].contains(part), "{part} in {}", asked[0]);
    }

    fs::write(&token_file, "someone-elses-token").unwrap();
    sample.refused(&env, "web identity token");
}

/// `nccopy` directory store -> S3 -> directory store loses nothing.
#[test]
fn nccopy_file_store_to_s3_and_back() {
    let server = Server::start(Kind::Moto);
    let dir = scratch("s3-nccopy");
    let endpoint = server.endpoint();
    let env = env_with(
        dir.path(),
        &[("AWS_ENDPOINT_URL", &endpoint), ("AWS_PROFILE", "none")],
    );
    let cdl = sample_cdl(dir.path());
    let source = url(&dir.path().join("src.zarr"), "nczarr,file");
    let back = url(&dir.path().join("back.zarr"), "nczarr,file");
    let s3 = format!("s3://{BUCKET}/copy/a#mode=nczarr,s3");
    for (program, args) in [
        ("ncgen", vec!["-4", "-o", &source, cdl.to_str().unwrap()]),
        ("nccopy", vec![&source, &s3]),
        ("nccopy", vec![&s3, &back]),
    ] {
        let r = tool(program, &args, &env);
        assert!(r.success(), "{}", r.describe());
    }
    let want = ncdump_ok(&source, &env).unwrap();
    assert_eq!(ncdump_ok(&s3, &env).unwrap(), want);
    assert_eq!(ncdump_ok(&back, &env).unwrap(), want);
}

/// `nccopy` directory store -> S3 -> zip archive -> directory store: every step loses nothing.
#[test]
fn nccopy_file_store_to_s3_to_zip() {
    let server = Server::start(Kind::Moto);
    let dir = scratch("s3-zip");
    let endpoint = server.endpoint();
    let env = env_with(
        dir.path(),
        &[("AWS_ENDPOINT_URL", &endpoint), ("AWS_PROFILE", "none")],
    );
    let cdl = sample_cdl(dir.path());
    let source = url(&dir.path().join("src.zarr"), "nczarr,file");
    let s3 = format!("s3://{BUCKET}/zip/a#mode=nczarr,s3");
    let zip = format!(
        "file://{}#mode=nczarr,zip",
        dir.path().join("out.zip").display()
    );
    for (program, args) in [
        ("ncgen", vec!["-4", "-o", &source, cdl.to_str().unwrap()]),
        ("nccopy", vec![&source, &s3]),
    ] {
        let r = tool(program, &args, &env);
        assert!(r.success(), "{}", r.describe());
    }
    let back = url(&dir.path().join("back.zarr"), "nczarr,file");
    for (from, to) in [(&s3, &zip), (&zip, &back)] {
        let r = tool("nccopy", &[from, to], &env);
        assert!(r.success(), "{}", r.describe());
    }
    let want = ncdump_ok(&source, &env).unwrap();
    assert_eq!(ncdump_ok(&zip, &env).unwrap(), want);
    assert_eq!(ncdump_ok(&back, &env).unwrap(), want);
}

/// A Moto server behind a proxy that records every request, and a scratch home whose tools
/// talk to the proxy (fields drop in order: the proxy goes before the server).
struct Counted {
    dir: tempfile::TempDir,
    endpoint: String,
    proxy: CountingProxy,
    _server: Server,
}

impl Counted {
    fn start(label: &str) -> Counted {
        let server = Server::start(Kind::Moto);
        let proxy = CountingProxy::start(server.port);
        Counted {
            dir: scratch(label),
            endpoint: proxy.endpoint(),
            proxy,
            _server: server,
        }
    }

    fn env(&self) -> Vec<(&str, Option<&str>)> {
        env_with(
            self.dir.path(),
            &[
                ("AWS_ENDPOINT_URL", &self.endpoint),
                ("AWS_PROFILE", "none"),
            ],
        )
    }
}

/// `ncgen` into a new dataset asks for none of its chunks; `ncdump` of a variable of 40
/// chunks: one GET per chunk, no HEAD at all; of a variable whose chunks hold many rows: one
/// GET per chunk too.
#[test]
fn ncdump_reads_each_chunk_with_one_get_and_no_head() {
    let counted = Counted::start("s3-count");
    let (dir, proxy, env) = (&counted.dir, &counted.proxy, counted.env());
    let cdl = sample_cdl(dir.path());
    let s3 = format!("s3://{BUCKET}/count/a#mode=nczarr,s3");
    let r = tool("ncgen", &["-4", "-o", &s3, cdl.to_str().unwrap()], &env);
    assert!(r.success(), "{}", r.describe());
    let writes = proxy.take();
    let chunk_puts = writes
        .iter()
        .filter(|r| r.method == "PUT" && r.target.contains("/count/a/v/"))
        .filter(|r| !r.target.contains("/."))
        .count();
    assert_eq!(chunk_puts, 40, "{writes:?}");
    // `w` is written in parts of its chunks; a new dataset has no chunk to read back first.
    let chunk_gets: Vec<&Request> = writes
        .iter()
        .filter(|r| r.method == "GET" && r.target.contains("/count/a/"))
        .filter(|r| !r.target.contains("/.") && !r.target.contains('?'))
        .collect();
    assert!(chunk_gets.is_empty(), "{chunk_gets:?}");
    assert!(
        writes
            .iter()
            .any(|r| r.method == "PUT" && r.target.contains("/count/a/w/")),
        "{writes:?}"
    );

    let r = tool("ncdump", &[&s3], &env);
    assert!(r.success(), "{}", r.describe());
    let reqs = proxy.take();
    let chunk_gets: Vec<&str> = reqs
        .iter()
        .filter(|r| r.method == "GET" && r.target.contains("/count/a/v/"))
        .filter(|r| !r.target.contains("/."))
        .map(|r| r.target.as_str())
        .collect();
    let mut unique = chunk_gets.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!((chunk_gets.len(), unique.len()), (40, 40), "{reqs:?}");
    // `ncdump` reads `w` row by row, 6 x 64 rows through each of its 4 deflated chunks: each is
    // fetched once, on its first row, and kept for the others.
    let w_gets = reqs
        .iter()
        .filter(|r| r.method == "GET" && r.target.contains("/count/a/w/"))
        .filter(|r| !r.target.contains("/."))
        .count();
    assert_eq!(w_gets, 4, "{reqs:?}");
    assert!(reqs.iter().all(|r| r.method != "HEAD"), "{reqs:?}");
}

/// NCZarr in Zarr v3 on S3: `ncgen` writes each chunk once and reads none; `ncdump` finds the
/// root `zarr.json` in its first round of metadata requests and the arrays from the root's
/// `_nczarr_group`, so it lists nothing, asks for each array's `zarr.json` once and each of the
/// 40 chunks of `v` in one GET, and makes no HEAD.
#[test]
fn zarr_v3_opens_without_listing_and_reads_each_chunk_once() {
    let counted = Counted::start("s3-count-v3");
    let (dir, proxy, env) = (&counted.dir, &counted.proxy, counted.env());
    let cdl = sample_cdl(dir.path());
    let s3 = format!("s3://{BUCKET}/count/v3#mode=nczarr,v3,s3");
    let r = tool("ncgen", &["-4", "-o", &s3, cdl.to_str().unwrap()], &env);
    assert!(r.success(), "{}", r.describe());
    let writes = proxy.take();
    let chunk = |r: &&Request, var: &str| {
        r.target.contains(&format!("/count/v3/{var}/c/")) && !r.target.contains('?')
    };
    let puts = writes.iter().filter(|r| r.method == "PUT" && chunk(r, "v"));
    assert_eq!(puts.count(), 40, "{writes:?}");
    assert!(
        !writes.iter().any(|r| r.method == "GET" && chunk(&r, "w")),
        "{writes:?}"
    );

    let r = tool("ncdump", &[&s3], &env);
    assert!(r.success(), "{}", r.describe());
    let reqs = proxy.take();
    let lists: Vec<&Request> = reqs.iter().filter(|r| r.target.contains('?')).collect();
    assert!(lists.is_empty(), "{lists:?}");
    assert!(reqs.iter().all(|r| r.method != "HEAD"), "{reqs:?}");
    let gets = |suffix: &str| {
        reqs.iter()
            .filter(|r| r.method == "GET" && r.target.ends_with(suffix))
            .count()
    };
    assert_eq!(
        (
            gets("/count/v3/zarr.json"),
            gets("/v/zarr.json"),
            gets("/w/zarr.json")
        ),
        (1, 1, 1),
        "{reqs:?}"
    );
    let mut chunk_gets: Vec<&str> = reqs
        .iter()
        .filter(|r| r.method == "GET" && chunk(r, "v"))
        .map(|r| r.target.as_str())
        .collect();
    assert_eq!(chunk_gets.len(), 40, "{reqs:?}");
    chunk_gets.sort_unstable();
    chunk_gets.dedup();
    assert_eq!(chunk_gets.len(), 40, "{reqs:?}");
}

/// The sample dataset, written by `ncgen` straight to a fresh s3s-fs at
/// `s3://BUCKET/<stem>/a`, and a proxy in front of that server which records what the tools
/// under test ask for (and answers the GETs a trap names itself). Fields drop in order: the
/// proxy goes before the server.
struct SampleBehindProxy {
    proxy: CountingProxy,
    endpoint: String,
    dir: tempfile::TempDir,
    cdl: std::path::PathBuf,
    stem: String,
    s3: String,
    _server: Server,
}

impl SampleBehindProxy {
    /// `trap`: a key of the dataset whose GETs the proxy answers itself, and how.
    fn start(stem: &str, trap: Option<(&str, Trap)>) -> SampleBehindProxy {
        let server = Server::start(Kind::S3sFs);
        let trap = trap.map(|(key, how)| (format!("/{BUCKET}/{stem}/a/{key}"), how));
        let proxy = CountingProxy::start_trapping(
            server.port,
            trap.as_ref().map(|(target, how)| (target.as_str(), *how)),
        );
        let dir = scratch(&format!("s3-{stem}"));
        let cdl = sample_cdl(dir.path());
        let s3 = format!("s3://{BUCKET}/{stem}/a#mode=nczarr,s3");
        let direct = server.endpoint();
        let env = signed_env(dir.path(), &direct, &[]);
        let r = tool("ncgen", &["-4", "-o", &s3, cdl.to_str().unwrap()], &env);
        assert!(r.success(), "{}", r.describe());
        SampleBehindProxy {
            endpoint: proxy.endpoint(),
            proxy,
            dir,
            cdl,
            stem: stem.to_string(),
            s3,
            _server: server,
        }
    }

    /// The environment of a tool that goes through the proxy, signed, plus `extra`.
    fn env<'a>(&'a self, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, Option<&'a str>)> {
        signed_env(self.dir.path(), &self.endpoint, extra)
    }

    /// The request target of the dataset's object `key`.
    fn target(&self, key: &str) -> String {
        format!("/{BUCKET}/{}/a/{key}", self.stem)
    }

    /// The GETs of chunk objects of variable `var` among `reqs`.
    fn chunk_gets<'r>(&self, reqs: &'r [Request], var: &str) -> Vec<&'r Request> {
        let below = self.target(&format!("{var}/"));
        reqs.iter()
            .filter(|r| r.method == "GET" && r.target.contains(&below))
            .filter(|r| !r.target.contains("/."))
            .collect()
    }
}

/// A clean environment signed with the test keys, talking to `endpoint`, plus `extra`.
fn signed_env<'a>(
    home: &'a Path,
    endpoint: &'a str,
    extra: &[(&'a str, &'a str)],
) -> Vec<(&'a str, Option<&'a str>)> {
    let mut vars = vec![
        ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
        ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
        ("AWS_ENDPOINT_URL", endpoint),
    ];
    vars.extend_from_slice(extra);
    env_with(home, &vars)
}

/// `ncdump` reads a variable one row at a time, here one chunk at a time (40 chunks of one
/// row): the chunks after each request are fetched ahead with their requests in flight
/// together, so they arrive on several connections (s3s-fs keeps connections open, so one
/// request at a time keeps to one), and still every chunk object is fetched exactly once,
/// with the right values.
#[test]
fn reading_chunk_after_chunk_from_s3_fetches_the_next_ones_ahead_once_each() {
    let sample = SampleBehindProxy::start("ahead", None);
    let env = sample.env(&[]);
    let dumped = tool("ncdump", &["-v", "v", &sample.s3], &env)
        .output()
        .unwrap();
    let reqs = sample.proxy.take();
    let chunk_gets = sample.chunk_gets(&reqs, "v");
    let mut unique: Vec<&str> = chunk_gets.iter().map(|r| r.target.as_str()).collect();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!((chunk_gets.len(), unique.len()), (40, 40), "{reqs:?}");
    let connections: std::collections::BTreeSet<usize> =
        chunk_gets.iter().map(|r| r.connection).collect();
    assert!(
        connections.len() >= 2,
        "the chunks came one request at a time: {reqs:?}"
    );
    assert!(reqs.iter().all(|r| r.method != "HEAD"), "{reqs:?}");

    let local = url(&sample.dir.path().join("local.zarr"), "nczarr,file");
    let cdl = sample.cdl.to_str().unwrap();
    let r = tool("ncgen", &["-4", "-o", &local, cdl], &env);
    assert!(r.success(), "{}", r.describe());
    let want = tool("ncdump", &["-v", "v", &local], &env).output().unwrap();
    assert_eq!(dump::normalise_name(&dumped), dump::normalise_name(&want));
}

/// A server that stalls on one chunk while `ncdump` reads chunk after chunk: the chunks
/// fetched ahead around it are used, and the tool fails with a netCDF error once that chunk's
/// GET has timed out, once: the request that wants the chunk gets the read-ahead's failure
/// instead of asking the stalled server again and waiting a second time.
#[test]
fn a_chunk_the_server_stalls_on_is_asked_for_once() {
    let sample = SampleBehindProxy::start("stall", Some(("v/5.0", Trap::Stall)));
    let env = sample.env(&[("NCZARR_RS_S3_TIMEOUT", "3")]);
    let r = tool("ncdump", &["-v", "v", &sample.s3], &env);
    assert!(!r.success() && !r.crashed(), "{}", r.describe());
    assert!(r.stderr.contains("v/5.0"), "{}", r.describe());
    let reqs = sample.proxy.take();
    let stalled = sample.target("v/5.0");
    let asked: Vec<&Request> = reqs
        .iter()
        .filter(|r| r.target.contains(&stalled))
        .collect();
    assert_eq!(asked.len(), 1, "{reqs:?}");
    assert!(
        sample.chunk_gets(&reqs, "v").len() > 6,
        "the chunks after it were not fetched ahead: {reqs:?}"
    );
}

/// A server that answers the GET of a chunk with an endless body (announced as 64 GiB): the
/// read fails at once with a netCDF error saying the object is larger than any chunk of the
/// dataset can be, without reading it, and the host program does not abort. Both ways a chunk
/// body is read: gathered whole (a compressed chunk) and copied frame by frame into the
/// caller's buffer (an uncompressed one). (It used to read until memory ran out, or, frame by
/// frame, until the timeout; a 4 GiB address space made the first an error.)
#[test]
fn an_endless_chunk_body_is_an_error_not_an_abort() {
    for (var, chunk) in [("w", "w/0.0.0"), ("v", "v/0.0")] {
        let sample = SampleBehindProxy::start("endless", Some((chunk, Trap::EndlessBody)));
        let env = sample.env(&[]);
        let started = std::time::Instant::now();
        let r = tool(
            "prlimit",
            &["--as=4294967296", "ncdump", "-v", var, &sample.s3],
            &env,
        );
        assert!(!r.success() && !r.crashed(), "{var}: {}", r.describe());
        assert!(
            r.stderr.contains("NetCDF: NCZarr error") && r.stderr.contains("is larger than"),
            "{var}: {}",
            r.describe()
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{var}: refused before reading: {:?}",
            started.elapsed()
        );
        let reqs = sample.proxy.take();
        let endless = sample.target(chunk);
        assert!(
            reqs.iter().any(|r| r.target.contains(&endless)),
            "{var}: {reqs:?}"
        );
    }
}

/// A server that went away: a netCDF error from the tool, within the configured timeout.
#[test]
fn a_stopped_server_fails_the_tool_cleanly() {
    let server = Server::start(Kind::S3sFs);
    let dir = scratch("s3-stopped");
    let endpoint = server.endpoint();
    server.stop();
    let env = env_with(
        dir.path(),
        &[
            ("AWS_ENDPOINT_URL", &endpoint),
            ("AWS_PROFILE", "none"),
            ("NCZARR_RS_S3_TIMEOUT", "2"),
        ],
    );
    let r = tool(
        "ncdump",
        &[&format!("s3://{BUCKET}/gone#mode=nczarr,s3")],
        &env,
    );
    assert!(!r.success() && !r.crashed(), "{}", r.describe());
    assert!(
        r.stderr.contains("nczarr-rs: object store"),
        "{}",
        r.describe()
    );
}

/// Opening pure Zarr lists the groups only: arrays are recognised by their `.zarray`, whose
/// GET reading them needs anyway, so a prefix holding an array's chunks is never listed.
#[test]
fn pure_zarr_open_never_lists_an_arrays_chunks() {
    let counted = Counted::start("s3-pure-list");
    let (dir, proxy, env) = (&counted.dir, &counted.proxy, counted.env());
    let cdl = dir.path().join("pure.cdl");
    let values: Vec<String> = (0..40).map(|i| i.to_string()).collect();
    let values = values.join(", ");
    fs::write(
        &cdl,
        format!(
            "netcdf pure {{\ndimensions:\n  x = 40 ;\nvariables:\n  int v(x) ;\n    \
             v:_ChunkSizes = 1 ;\n  int w(x) ;\n    w:_ChunkSizes = 2 ;\ndata:\n  v = {values} ;\n  \
             w = {values} ;\ngroup: g {{\n  variables:\n    int u(x) ;\n      u:_ChunkSizes = 4 ;\n  \
             data:\n    u = {values} ;\n  }}\n}}\n"
        ),
    )
    .unwrap();
    let s3 = format!("s3://{BUCKET}/pure/a#mode=zarr,s3");
    let r = tool("ncgen", &["-4", "-o", &s3, cdl.to_str().unwrap()], &env);
    assert!(r.success(), "{}", r.describe());
    proxy.take();

    let dump = ncdump_ok(&s3, &env).unwrap();
    for declared in ["int v(x)", "int w(x)", "group: g", "int u("] {
        assert!(dump.contains(declared), "{declared} missing from\n{dump}");
    }
    let reqs = proxy.take();
    let listed: Vec<String> = reqs
        .iter()
        .filter(|r| r.method == "GET" && r.target.contains("list-type"))
        .map(|r| r.target.replace("%2F", "/"))
        .collect();
    assert!(
        listed.iter().any(|t| t.contains("prefix=pure/a/")),
        "the root is listed: {reqs:?}"
    );
    for array in ["pure/a/v/", "pure/a/w/", "pure/a/g/u/"] {
        assert!(
            listed
                .iter()
                .all(|t| !t.contains(&format!("prefix={array}&"))
                    && !t.ends_with(&format!("prefix={array}"))),
            "{array} listed: {listed:?}"
        );
    }
}

/// An `s3://bucket/key` URL that names no mode, which netcdf-c alone reads as OPeNDAP (4.9.0)
/// or refuses (4.10.1): `ncgen` creates NCZarr there, and stock `ncdump` (4.9.0) and
/// netCDF4-python (4.10.1) open it, reading what the same CDL gives on a directory store.
#[test]
fn s3_urls_without_a_mode_are_zarr_datasets() {
    let Some(lib) = common::preloaded_library() else {
        return;
    };
    let server = Server::start(Kind::Moto);
    let dir = scratch("s3-bare");
    let endpoint = server.endpoint();
    let env = env_with(
        dir.path(),
        &[("AWS_ENDPOINT_URL", &endpoint), ("AWS_PROFILE", "none")],
    );
    let cdl = sample_cdl(dir.path());
    let local = url(&dir.path().join("local.zarr"), "nczarr,file");
    let bare = format!("s3://{BUCKET}/bare/a");
    for target in [&local, &bare] {
        let r = tool("ncgen", &["-4", "-o", target, cdl.to_str().unwrap()], &env);
        assert!(r.success(), "{}", r.describe());
    }
    let want = ncdump_ok(&local, &env).unwrap();
    assert_eq!(ncdump_ok(&bare, &env).unwrap(), want);
    assert_eq!(
        ncdump_ok(&format!("{bare}#mode=nczarr,s3"), &env).unwrap(),
        want
    );
    let script = "import sys, netCDF4\n\
                  ds = netCDF4.Dataset(sys.argv[1])\n\
                  print(sorted(ds.variables), ds['v'][:].sum())";
    let read = |url: &str| {
        common::python::run_with_vars("netcdf4", &["-c", script, url], Some(lib), &env)
            .unwrap_or_else(|e| panic!("{url}: {e}"))
    };
    assert_eq!(read(&bare), read(&local));
}
