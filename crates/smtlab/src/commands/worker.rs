//! `smtlab __worker` (hidden): one worker process of a built-in workload,
//! driven by the parent smtlab over stdin/stdout (see
//! `smtlab_execute::protocol`). Not for people.

pub fn run() -> anyhow::Result<i32> {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut output = std::io::stdout().lock();
    Ok(smtlab_execute::worker::worker_main(&mut input, &mut output))
}
