//! The local stack's S3 server: s3s-fs's file store (objects as files under
//! a directory) behind s3s's service, with the options of s3s-fs 0.14.1's
//! own binary. Ours rather than s3s-fs's for one line: every accepted
//! connection gets TCP_NODELAY; without it a small GET's last segment waited
//! on the client's delayed ACK (Nagle), about 40 ms per object on loopback,
//! which was most of each pipeline stage's time (`bench ingest`).

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;
use s3s_fs::FileSystem;
use tokio::net::TcpListener;
use tracing::info;

#[derive(Debug, Parser)]
#[command(name = "s3s-fs", version, about = "s3s-fs's file store over S3 (rag-engine's local stack)")]
struct Opt {
    /// Host name to listen on.
    #[arg(long, default_value = "localhost")]
    host: String,

    /// Port number to listen on.
    #[arg(long, default_value = "8014")]
    port: u16,

    /// Access key used for authentication (with --secret-key).
    #[arg(long, requires = "secret_key")]
    access_key: Option<String>,

    /// Secret key used for authentication (with --access-key).
    #[arg(long, requires = "access_key")]
    secret_key: Option<String>,

    /// Root directory of stored data.
    root: PathBuf,
}

fn main() -> anyhow::Result<()> {
    let opt = Opt::parse();
    tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::from_default_env()).with_ansi(false).init();
    tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the runtime")?.block_on(serve(opt))
}

async fn serve(opt: Opt) -> anyhow::Result<()> {
    // s3s-fs's error is not a std::error::Error (it only converts into one).
    let fs = FileSystem::new(&opt.root).map_err(|err| anyhow::anyhow!("opening {}: {err:?}", opt.root.display()))?;
    let service = {
        let mut builder = S3ServiceBuilder::new(fs);
        if let (Some(access_key), Some(secret_key)) = (opt.access_key, opt.secret_key) {
            builder.set_auth(SimpleAuth::from_single(access_key, secret_key));
            info!("authentication is enabled");
        }
        builder.build()
    };
    let listener =
        TcpListener::bind((opt.host.as_str(), opt.port)).await.with_context(|| format!("listening on {}:{}", opt.host, opt.port))?;
    info!("server is running at http://{}", listener.local_addr()?);

    let http_server = ConnBuilder::new(TokioExecutor::new());
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut ctrl_c = std::pin::pin!(tokio::signal::ctrl_c());
    loop {
        let socket = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((socket, _)) => socket,
                Err(err) => {
                    tracing::error!("error accepting connection: {err}");
                    continue;
                }
            },
            _ = ctrl_c.as_mut() => break,
        };
        if let Err(err) = socket.set_nodelay(true) {
            tracing::warn!("could not set TCP_NODELAY: {err}");
        }
        let conn = http_server.serve_connection(TokioIo::new(socket), service.clone());
        let conn = graceful.watch(conn.into_owned());
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
    // Requests in flight get ten seconds to finish.
    tokio::select! {
        () = graceful.shutdown() => {},
        () = tokio::time::sleep(std::time::Duration::from_secs(10)) => {},
    }
    info!("server is stopped");
    Ok(())
}
