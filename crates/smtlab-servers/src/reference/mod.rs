//! Reference tools run beside smtlab's own: Debian's `nginx` as the
//! reference server and `wrk` as the reference load generator. Not built
//! yet.
