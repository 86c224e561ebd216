//! HTTP/1.x for the static server, shared by its four architectures:
//! parsing a request from bytes received so far ([`parse_request`], with
//! `httparse`, framing as strictly as RFC 9112 asks), finding the regular
//! file under the document root without ever leaving it ([`Site::open`]),
//! and the response head ([`Response`], its type from the file's
//! extension: [`content_type`]).
//!
//! Nothing here does I/O on sockets: each architecture reads and writes in
//! its own way (blocking, epoll, stages) and calls these pure steps, so all
//! four answer every request the same way.
//!
//! * `status.rs`: the statuses the server sends;
//! * `request.rs`: parsing a request head, and its limits;
//! * `site.rs`: the document root and media types;
//! * `response.rs`: the response head and body.

mod request;
mod response;
mod site;
mod status;

pub use request::{
    parse_request, Method, Parsed, Request, MAX_BODY_BYTES, MAX_CHUNKED_WIRE_BYTES, MAX_HEADERS,
    MAX_HEAD_BYTES, MAX_URI_BYTES,
};
pub use response::{error_response, head, respond, Body, Response};
pub use site::{content_type, BeforeOpen, Found, Site};
pub use status::Status;

#[cfg(test)]
mod tests;
