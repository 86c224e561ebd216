//! A running `smtlab serve ...` (web or chat) for the server tests: started
//! with its stdout piped and read on a thread (the first line, which names
//! the address, waited for; the rest drained so the server never blocks on
//! a full pipe), stopped by a signal, killed and reaped when dropped, also
//! when a test fails. Each test file reads the first line its own way.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

pub struct Served {
    child: Child,
    /// The server's first line (`listening on URL ...`).
    pub first: String,
    /// Its stdout lines after the first.
    lines: mpsc::Receiver<String>,
}

impl Served {
    /// `smtlab serve ARGS...`; waits up to 30 s for its first line.
    pub fn start(args: &[&str]) -> Served {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("smtlab"))
            .arg("serve")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut served = Served {
            child,
            first: String::new(),
            lines,
        };
        served.first = served
            .lines
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("smtlab serve {args:?}: no first line"));
        served
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Sends `sig`, waits for the exit (10 s at most), returns the status
    /// and the remaining stdout lines.
    pub fn stop(mut self, sig: Signal) -> (ExitStatus, Vec<String>) {
        kill(Pid::from_raw(self.pid()), sig).unwrap();
        let until = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(Instant::now() < until, "the server did not stop on {sig}");
            std::thread::sleep(Duration::from_millis(10));
        };
        let mut rest = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            rest.push(line);
        }
        (status, rest)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
