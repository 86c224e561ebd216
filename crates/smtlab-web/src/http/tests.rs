use std::os::unix::fs::OpenOptionsExt;

use super::*;

fn req(text: &str) -> Parsed {
    parse_request(text.as_bytes())
}

fn status_of(text: &str) -> Status {
    match req(text) {
        Parsed::Error { status, .. } => status,
        other => panic!("{text:?}: {other:?}"),
    }
}

#[test]
fn requests_parse_with_keep_alive_by_version_and_pipelining() {
    let two = "GET /a%20b?x=1 HTTP/1.1\r\nHost: h\r\n\r\nHEAD /c HTTP/1.0\r\n\r\n";
    let Parsed::Request { request, used } = req(two) else {
        panic!()
    };
    assert_eq!(request.path, "/a b");
    assert_eq!(
        (request.method, request.minor, request.keep_alive),
        (Method::Get, 1, true)
    );
    let Parsed::Request { request, used: u2 } = parse_request(&two.as_bytes()[used..]) else {
        panic!()
    };
    assert_eq!(
        (request.method, request.minor, request.keep_alive),
        (Method::Head, 0, false)
    );
    assert_eq!(used + u2, two.len());
    let Parsed::Request { request, .. } = req("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")
    else {
        panic!()
    };
    assert!(request.keep_alive);
    let Parsed::Request { request, .. } =
        req("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    else {
        panic!()
    };
    assert!(!request.keep_alive);
    // A body is read and dropped.
    let with_body = "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcGET";
    assert!(matches!(req(with_body), Parsed::Request { used, .. } if used == with_body.len() - 3));
    assert_eq!(
        req("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nab"),
        Parsed::Partial
    );
    assert_eq!(req("GET / HTTP/1.1\r\nHo"), Parsed::Partial);
}

#[test]
fn bad_requests_get_their_status() {
    assert_eq!(status_of("garbage\r\n\r\n"), Status::BadRequest);
    assert_eq!(
        status_of("GET / HTTP/1.1\r\n\r\n"),
        Status::BadRequest,
        "no Host"
    );
    assert_eq!(
        status_of("GET ftp://x/ HTTP/1.1\r\nHost: h\r\n\r\n"),
        Status::BadRequest
    );
    assert_eq!(
        status_of("GET * HTTP/1.1\r\nHost: h\r\n\r\n"),
        Status::BadRequest
    );
    assert_eq!(
        status_of("GET /%zz HTTP/1.1\r\nHost: h\r\n\r\n"),
        Status::BadRequest
    );
    assert_eq!(
        status_of("GET /%00 HTTP/1.1\r\nHost: h\r\n\r\n"),
        Status::BadRequest
    );
    assert_eq!(
        status_of("POST / HTTP/1.1\r\nHost: h\r\n\r\n"),
        Status::MethodNotAllowed
    );
    assert_eq!(
        status_of("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 9999999\r\n\r\n"),
        Status::PayloadTooLarge
    );
    let long = format!(
        "GET /{} HTTP/1.1\r\nHost: h\r\n\r\n",
        "a".repeat(MAX_URI_BYTES)
    );
    assert_eq!(status_of(&long), Status::UriTooLong);
    let endless = format!("GET /{}", "a".repeat(MAX_HEAD_BYTES));
    assert_eq!(status_of(&endless), Status::UriTooLong);
    let big = format!(
        "GET / HTTP/1.1\r\nHost: h\r\nX: {}\r\n",
        "a".repeat(MAX_HEAD_BYTES)
    );
    assert_eq!(status_of(&big), Status::HeaderFieldsTooLarge);
    let many: String = (0..MAX_HEADERS + 1)
        .map(|i| format!("X{i}: y\r\n"))
        .collect();
    assert_eq!(
        status_of(&format!("GET / HTTP/1.1\r\nHost: h\r\n{many}\r\n")),
        Status::HeaderFieldsTooLarge
    );
    let r = error_response(Status::MethodNotAllowed, 1);
    let head = String::from_utf8(r.head).unwrap();
    assert!(
        head.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"),
        "{head}"
    );
    assert!(head.contains("Allow: GET, HEAD\r\n") && head.ends_with("\r\n\r\n"));
    assert!(head.contains("Connection: close\r\n"));
}

#[test]
fn files_are_found_under_the_root_only() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::write(root.join("d/f"), b"hello").unwrap();
    std::fs::write(dir.path().join("secret"), b"no").unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret"), root.join("out")).unwrap();
    let site = Site::new(&root).unwrap();
    assert_eq!(site.open("/d/f").unwrap().len, 5);
    for bad in [
        "/../secret",
        "/d/../../secret",
        "/out",
        "/d",
        "/missing",
        "/d/f/x",
    ] {
        assert_eq!(site.open(bad).unwrap_err(), Status::NotFound, "{bad}");
    }
}

#[test]
fn responses_carry_length_dates_and_304() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), b"hello").unwrap();
    let site = Site::new(dir.path()).unwrap();
    let get = |extra: &str| {
        let Parsed::Request { request, .. } =
            req(&format!("GET /f HTTP/1.1\r\nHost: h\r\n{extra}\r\n"))
        else {
            panic!()
        };
        respond(&site, &request)
    };
    let r = get("");
    let head = String::from_utf8(r.head.clone()).unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"));
    assert!(head.contains("Content-Length: 5\r\n") && head.contains("Last-Modified: "));
    assert_eq!(r.body.len(), 5);
    let lm = head
        .lines()
        .find_map(|l| l.strip_prefix("Last-Modified: "))
        .unwrap()
        .to_string();
    let r = get(&format!("If-Modified-Since: {lm}\r\n"));
    assert_eq!(r.status, Status::NotModified);
    assert!(r.body.is_empty());
    let r = get("If-Modified-Since: Thu, 01 Jan 1970 00:00:00 GMT\r\n");
    assert_eq!(r.status, Status::Ok);
    let Parsed::Request { request, .. } = req("GET /nope HTTP/1.1\r\nHost: h\r\n\r\n") else {
        panic!()
    };
    let r = respond(&site, &request);
    assert_eq!((r.status, r.keep_alive), (Status::NotFound, true));
    let Parsed::Request { request, .. } = req("HEAD /f HTTP/1.0\r\n\r\n") else {
        panic!()
    };
    let r = respond(&site, &request);
    assert!(r.body.is_empty() && !r.keep_alive);
    assert!(String::from_utf8(r.head)
        .unwrap()
        .contains("Content-Length: 5\r\n"));
}

fn path_of(text: &str) -> String {
    match req(text) {
        Parsed::Request { request, .. } => request.path,
        other => panic!("{text:?}: {other:?}"),
    }
}

#[test]
fn two_different_content_lengths_are_400_and_identical_ones_are_one() {
    let two = "GET /a HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nContent-Length: 25\r\n\r\n\
               GET /b HTTP/1.1\r\nHost: h\r\n\r\n";
    assert_eq!(status_of(two), Status::BadRequest);
    assert_eq!(
        status_of("GET /a HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 4\r\n\r\nabcd"),
        Status::BadRequest
    );
    // RFC 9110 §8.6: the same value repeated is that value.
    for same in [
        "Content-Length: 3\r\nContent-Length: 3\r\n",
        "Content-Length: 3, 3\r\n",
        "Content-Length: 3 \r\n",
    ] {
        let text = format!("GET /a HTTP/1.1\r\nHost: h\r\n{same}\r\nabcGET");
        assert!(
            matches!(req(&text), Parsed::Request { used, .. } if used == text.len() - 3),
            "{same:?}: {:?}",
            req(&text)
        );
    }
    // Digits only: what one parser reads as a number another does not.
    for bad in ["+3", "-1", "0x3", "3 3", "", "3;", "١"] {
        let text = format!("GET /a HTTP/1.1\r\nHost: h\r\nContent-Length: {bad}\r\n\r\nabc");
        assert_eq!(status_of(&text), Status::BadRequest, "{bad:?}");
    }
    // Past u64: too large, not a wrapped small number.
    assert_eq!(
        status_of("GET /a HTTP/1.1\r\nHost: h\r\nContent-Length: 18446744073709551619\r\n\r\n"),
        Status::PayloadTooLarge
    );
}

#[test]
fn two_host_lines_or_a_host_that_is_no_authority_are_400() {
    assert_eq!(
        status_of("GET /a HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
        Status::BadRequest
    );
    assert_eq!(
        status_of("GET /a HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n"),
        Status::BadRequest,
        "HTTP/1.0 too"
    );
    for bad in ["a b", "user@a", "a/b", "a\\b"] {
        assert_eq!(
            status_of(&format!("GET /a HTTP/1.1\r\nHost: {bad}\r\n\r\n")),
            Status::BadRequest,
            "{bad}"
        );
    }
    for good in [
        "a",
        "127.0.0.1:8080",
        "[::1]:80",
        "xn--bcher-kva.example",
        "",
    ] {
        assert_eq!(
            path_of(&format!("GET /a HTTP/1.1\r\nHost: {good}\r\n\r\n")),
            "/a",
            "{good}"
        );
    }
}

#[test]
fn absolute_form_targets_are_served_by_their_path() {
    for (target, path) in [
        ("http://127.0.0.1:8080/a.txt", "/a.txt"),
        ("HTTP://Example.COM/d/%41?q=1", "/d/A"),
        ("https://h/", "/"),
        ("http://h", "/"),
        ("http://h?x", "/"),
    ] {
        assert_eq!(
            path_of(&format!("GET {target} HTTP/1.1\r\nHost: h\r\n\r\n")),
            path,
            "{target}"
        );
    }
    for bad in [
        "http:///a",
        "http://user@h/a",
        "http://h h/a",
        "gopher://h/a",
        "http:/h/a",
        "h/a",
    ] {
        assert_eq!(
            status_of(&format!("GET {bad} HTTP/1.1\r\nHost: h\r\n\r\n")),
            Status::BadRequest,
            "{bad}"
        );
    }
    // Host is still required of an HTTP/1.1 request (RFC 9112 §3.2).
    assert_eq!(
        status_of("GET http://h/a HTTP/1.1\r\n\r\n"),
        Status::BadRequest
    );
}

#[test]
fn a_version_that_is_not_one_is_400_another_major_505_a_later_minor_11() {
    for bad in [
        "http/1.1",
        "HTTP/1",
        "HTTP/1.1x",
        "HTTP/11",
        "HTTP/a.b",
        "HTTP/1.1.1",
        "HTTP/",
        "HTTPS/1.1",
    ] {
        assert_eq!(
            status_of(&format!("GET /a {bad}\r\nHost: h\r\n\r\n")),
            Status::BadRequest,
            "{bad}"
        );
    }
    assert_eq!(status_of("GET /a\r\n\r\n"), Status::BadRequest, "HTTP/0.9");
    for other in ["HTTP/2.0", "HTTP/3.0", "HTTP/0.9"] {
        assert_eq!(
            status_of(&format!("GET /a {other}\r\nHost: h\r\n\r\n")),
            Status::VersionNotSupported,
            "{other}"
        );
    }
    let text = "GET /a HTTP/1.2\r\nHost: h\r\n\r\nGET";
    let Parsed::Request { request, used } = req(text) else {
        panic!("{:?}", req(text))
    };
    assert_eq!(
        (request.minor, request.keep_alive, used),
        (1, true, text.len() - 3)
    );
    // Not all there yet: wait, whichever it turns out to be.
    assert_eq!(req("GET /a HTTP/2"), Parsed::Partial);
    assert_eq!(req("GET /a HTTP/1.2\r\nHo"), Parsed::Partial);
}

#[test]
fn chunked_bodies_are_dropped_and_ambiguous_framing_is_400() {
    let body = "4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\nX-Trailer: t\r\n\r\n";
    let text = format!("GET /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n{body}GET");
    assert!(
        matches!(req(&text), Parsed::Request { used, .. } if used == text.len() - 3),
        "{:?}",
        req(&text)
    );
    for te in [
        "gzip, chunked",
        "gzip\r\nTransfer-Encoding: chunked",
        "CHUNKED",
    ] {
        let text =
            format!("GET /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: {te}\r\n\r\n0\r\n\r\n");
        assert!(
            matches!(req(&text), Parsed::Request { .. }),
            "{te}: {:?}",
            req(&text)
        );
    }
    // Every half-way point waits for more.
    for cut in 1..body.len() {
        let text = format!(
            "GET /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n{}",
            &body[..cut]
        );
        assert_eq!(req(&text), Parsed::Partial, "cut at {cut}");
    }
    let chunked =
        |te: &str, body: &str| format!("GET /a HTTP/1.1\r\nHost: h\r\n{te}\r\n\r\n{body}");
    for (te, body, want) in [
        (
            "Transfer-Encoding: chunked\r\nContent-Length: 5",
            "0\r\n\r\n",
            Status::BadRequest,
        ),
        (
            "Content-Length: 5\r\nTransfer-Encoding: chunked",
            "0\r\n\r\n",
            Status::BadRequest,
        ),
        ("Transfer-Encoding: gzip", "", Status::BadRequest),
        ("Transfer-Encoding: chunked, gzip", "", Status::BadRequest),
        (
            "Transfer-Encoding: chunked, chunked",
            "0\r\n\r\n",
            Status::BadRequest,
        ),
        (
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked",
            "0\r\n\r\n",
            Status::BadRequest,
        ),
        ("Transfer-Encoding: ", "", Status::BadRequest),
        ("Transfer-Encoding: chunked", "zz\r\n", Status::BadRequest),
        (
            "Transfer-Encoding: chunked",
            "3\r\nabcX\r\n0\r\n\r\n",
            Status::BadRequest,
        ),
        (
            "Transfer-Encoding: chunked",
            "3\r\nabc\n0\r\n\r\n",
            Status::BadRequest,
        ),
        (
            "Transfer-Encoding: chunked",
            "ffffffffffffffffff\r\n",
            Status::BadRequest,
        ),
        (
            "Transfer-Encoding: chunked",
            "100001\r\n",
            Status::PayloadTooLarge,
        ),
    ] {
        assert_eq!(status_of(&chunked(te, body)), want, "{te:?} {body:?}");
    }
    assert_eq!(
        status_of("GET /a HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
        Status::BadRequest,
        "HTTP/1.0 has no chunked"
    );
    // Framing that never ends is refused once past its limit.
    let endless = chunked(
        "Transfer-Encoding: chunked",
        &"1\r\na\r\n".repeat(MAX_CHUNKED_WIRE_BYTES as usize / 6 + 1),
    );
    assert_eq!(status_of(&endless), Status::PayloadTooLarge);
}

#[test]
fn content_type_follows_the_extension() {
    for (path, t) in [
        ("/index.html", "text/html"),
        ("/d/INDEX.HTM", "text/html"),
        ("/s.css", "text/css"),
        ("/a.js", "text/javascript"),
        ("/a.json", "application/json"),
        ("/i.svg", "image/svg+xml"),
        ("/i.png", "image/png"),
        ("/i.jpg", "image/jpeg"),
        ("/i.jpeg", "image/jpeg"),
        ("/i.gif", "image/gif"),
        ("/r.txt", "text/plain"),
        ("/p.pdf", "application/pdf"),
        ("/m.wasm", "application/wasm"),
        ("/dir00000/class0_0", "application/octet-stream"),
        ("/a.tar.gz", "application/octet-stream"),
        ("/.html/x", "application/octet-stream"),
        ("/x.", "application/octet-stream"),
    ] {
        assert_eq!(content_type(path), t, "{path}");
    }
}

#[test]
fn only_regular_files_are_opened_and_a_fifo_never_blocks() {
    let dir = tempfile::tempdir().unwrap();
    nix::unistd::mkfifo(&dir.path().join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(dir.path().join("sock")).unwrap();
    std::fs::write(dir.path().join("a.css"), b"body{}").unwrap();
    let site = Site::new(dir.path()).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let s = site.clone();
    std::thread::spawn(move || {
        let _ = tx.send(["/fifo", "/sock"].map(|p| s.open(p).err()));
    });
    let Ok(got) = rx.recv_timeout(std::time::Duration::from_secs(5)) else {
        // Let the stuck open return so the test process can end.
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(dir.path().join("fifo"));
        panic!("opening a FIFO without a writer blocked");
    };
    assert_eq!(got, [Some(Status::NotFound); 2]);
    let Parsed::Request { request, .. } = req("GET /a.css HTTP/1.1\r\nHost: h\r\n\r\n") else {
        panic!()
    };
    let head = String::from_utf8(respond(&site, &request).head).unwrap();
    assert!(head.contains("Content-Type: text/css\r\n"), "{head}");
}

/// The `name:` field of a response head.
fn field<'h>(head: &'h str, name: &str) -> &'h str {
    head.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
        .unwrap_or_else(|| panic!("no {name} in {head}"))
}

/// RFC 9110 §8.8.2.1: Last-Modified is never later than Date. A file dated
/// in the future (a clock ahead where it was written, `touch -d`) sent
/// with its own date made a browser revalidate with that date, and every
/// edit before it was answered 304: Chromium kept showing the old
/// stylesheet. It is sent as modified at the Date, and the file edited
/// since is sent again.
#[test]
fn a_file_dated_in_the_future_is_last_modified_at_the_date_and_its_edit_is_sent() {
    use std::time::{Duration, SystemTime};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.css");
    std::fs::write(&path, b"body{background:red}").unwrap();
    let day = Duration::from_secs(86_400);
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(SystemTime::now() + day).unwrap();
    let site = Site::new(dir.path()).unwrap();
    let get = |extra: &str| {
        let text = format!("GET /s.css HTTP/1.1\r\nHost: h\r\n{extra}\r\n");
        let Parsed::Request { request, .. } = req(&text) else {
            panic!("{text}")
        };
        let r = respond(&site, &request);
        (r.status, String::from_utf8(r.head).unwrap())
    };
    let (status, head) = get("");
    assert_eq!(status, Status::Ok);
    let date = httpdate::parse_http_date(field(&head, "Date")).unwrap();
    let sent = field(&head, "Last-Modified").to_string();
    let modified = httpdate::parse_http_date(&sent).unwrap();
    assert!(modified <= date, "{head}");
    // Revalidated with the date it was sent with: still dated in the
    // future, so not known unchanged since: sent again.
    let (status, _) = get(&format!("If-Modified-Since: {sent}\r\n"));
    assert_eq!(status, Status::Ok);
    // Edited a second later (its own clock now right).
    std::fs::write(&path, b"body{background:blue}").unwrap();
    file.set_modified(date + Duration::from_secs(1)).unwrap();
    let (status, head) = get(&format!("If-Modified-Since: {sent}\r\n"));
    assert_eq!(status, Status::Ok, "{head}");
}
