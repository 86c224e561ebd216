//! nginx as smtlab starts it: without root, in the foreground, with a
//! configuration generated in a directory of its own (the pid file, the
//! temporary paths and the logs that a packaged nginx would put under
//! `/var`), serving the same file set as smtlab's `web`, with N worker
//! processes, worker k pinned to the k-th CPU of the point
//! (`worker_cpu_affinity`), listening on 127.0.0.1 only.
//!
//! nginx is one architecture: N worker processes, each a single-threaded
//! event loop (epoll, non-blocking sockets, `sendfile`): the `event` model
//! in processes.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Where Debian installs nginx; `PATH` is searched after it.
const KNOWN: [&str; 2] = ["/usr/sbin/nginx", "/usr/local/sbin/nginx"];

/// Most worker connections per nginx worker: far above any load smtlab
/// drives, so nginx never refuses a connection smtlab's server would take.
pub const WORKER_CONNECTIONS: usize = 16_384;

/// The nginx binary, if installed.
pub fn find() -> Option<PathBuf> {
    let known = KNOWN.iter().map(PathBuf::from);
    let on_path: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).map(|d| d.join("nginx")).collect())
        .unwrap_or_default();
    known.chain(on_path).find(|p| p.is_file())
}

/// Why nginx cannot be measured here, for every output that skips it.
pub fn missing_reason() -> &'static str {
    "nginx is not installed (Debian: apt-get install nginx; scripts/setup.sh installs it)"
}

/// What one nginx instance serves, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NginxConfig {
    /// Worker processes.
    pub workers: usize,
    /// Worker k runs on `cpus[k % len]`; empty: not pinned.
    pub cpus: Vec<u32>,
    /// The document root (absolute).
    pub root: PathBuf,
    pub listen: SocketAddr,
    /// smtlab runs as root: nginx would switch its workers to an
    /// unprivileged user who cannot read the file set under root's home;
    /// `user root` keeps them as the invoking user, as without root.
    pub as_root: bool,
}

impl NginxConfig {
    /// The `nginx.conf` text for an instance whose own files (pid, logs,
    /// temporary paths) are under `dir`.
    pub fn render(&self, dir: &Path) -> String {
        let d = dir.display();
        let mut s = String::new();
        // `daemon off`: nginx stays smtlab's child, so it is waited for and
        // its CPU use (its workers', reaped by the master) comes with it.
        let _ = writeln!(s, "daemon off;");
        let _ = writeln!(s, "master_process on;");
        if self.as_root {
            let _ = writeln!(s, "user root;");
        }
        let _ = writeln!(s, "worker_processes {};", self.workers);
        if !self.cpus.is_empty() {
            let masks: Vec<String> = (0..self.workers)
                .map(|k| affinity_mask(self.cpus[k % self.cpus.len()]))
                .collect();
            let _ = writeln!(s, "worker_cpu_affinity {};", masks.join(" "));
        }
        let _ = writeln!(s, "pid {d}/nginx.pid;");
        let _ = writeln!(s, "error_log {d}/error.log warn;");
        let _ = writeln!(s, "worker_rlimit_nofile {};", 2 * WORKER_CONNECTIONS + 64);
        let _ = writeln!(s, "events {{");
        let _ = writeln!(s, "    worker_connections {WORKER_CONNECTIONS};");
        let _ = writeln!(s, "}}");
        let _ = writeln!(s, "http {{");
        // Like smtlab's `web`: no access log, sendfile, keep-alive without
        // a request limit, the same idle timeout as its default.
        let _ = writeln!(s, "    access_log off;");
        let _ = writeln!(s, "    sendfile on;");
        let _ = writeln!(s, "    tcp_nopush on;");
        let _ = writeln!(s, "    keepalive_requests 1000000000;");
        let _ = writeln!(s, "    keepalive_timeout 5s;");
        let _ = writeln!(s, "    default_type application/octet-stream;");
        for (what, sub) in [
            ("client_body_temp_path", "body"),
            ("proxy_temp_path", "proxy"),
            ("fastcgi_temp_path", "fastcgi"),
            ("uwsgi_temp_path", "uwsgi"),
            ("scgi_temp_path", "scgi"),
        ] {
            let _ = writeln!(s, "    {what} {d}/{sub};");
        }
        let _ = writeln!(s, "    server {{");
        let _ = writeln!(s, "        listen {};", self.listen);
        let _ = writeln!(s, "        root {};", self.root.display());
        let _ = writeln!(s, "    }}");
        let _ = writeln!(s, "}}");
        s
    }
}

/// nginx's affinity mask for one CPU: binary digits, CPU 0 rightmost.
fn affinity_mask(cpu: u32) -> String {
    let mut m = "0".repeat(cpu as usize + 1);
    m.replace_range(0..1, "1");
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(workers: usize, cpus: Vec<u32>) -> NginxConfig {
        NginxConfig {
            workers,
            cpus,
            root: "/srv/files".into(),
            listen: "127.0.0.1:8080".parse().unwrap(),
            as_root: false,
        }
    }

    #[test]
    fn masks_put_cpu_zero_rightmost() {
        assert_eq!(affinity_mask(0), "1");
        assert_eq!(affinity_mask(1), "10");
        assert_eq!(affinity_mask(5), "100000");
    }

    #[test]
    fn workers_are_pinned_in_order_and_wrap_around() {
        let text = config(3, vec![2, 0]).render(Path::new("/tmp/x"));
        assert!(text.contains("worker_processes 3;"), "{text}");
        assert!(text.contains("worker_cpu_affinity 100 1 100;"), "{text}");
        let unpinned = config(2, Vec::new()).render(Path::new("/tmp/x"));
        assert!(!unpinned.contains("worker_cpu_affinity"), "{unpinned}");
    }

    #[test]
    fn everything_nginx_writes_is_under_its_directory() {
        let text = config(1, vec![0]).render(Path::new("/tmp/run-1"));
        assert!(text.contains("listen 127.0.0.1:8080;"));
        assert!(text.contains("root /srv/files;"));
        for line in text.lines() {
            let line = line.trim();
            let writes = [
                "pid ",
                "error_log ",
                "client_body_temp_path ",
                "proxy_temp_path ",
            ];
            if writes.iter().any(|w| line.starts_with(w)) {
                assert!(line.contains("/tmp/run-1/"), "{line}");
            }
        }
        assert!(text.contains("daemon off;"));
        assert!(text.contains("access_log off;"));
        assert!(!text.contains("user "));
        let root = NginxConfig {
            as_root: true,
            ..config(1, vec![0])
        };
        assert!(root.render(Path::new("/tmp/x")).contains("user root;"));
    }
}
