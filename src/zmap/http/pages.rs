//! The GET of a directory's index page: `<server>/<dir>/`, with the trailing slash servers
//! redirect to, sent with the store's login.
//!
//! Owns what a page answer must be to be read: a success, HTML (or no content type), and at
//! most [`MOST_PAGE_BYTES`], however the server sends it (with a length, or chunked without
//! one, as nginx's and Apache's index pages are). Knows nothing of what a page lists
//! ([`super::index_page`]) nor of keys or Zarr.

use super::index_page::MOST_PAGE_BYTES;
use crate::error::{Error, Result};
use crate::zmap::remote::full_chain;
use crate::zmap::remote::{IndexPage, IndexPages, Transfer};
use async_trait::async_trait;
use object_store::RetryConfig;
use std::time::Instant;

/// Reads index pages of one server.
#[derive(Debug)]
pub struct PageReader {
    client: reqwest::Client,
    server: reqwest::Url,
    /// When and how often a GET that failed in a way that may pass is sent again: the object
    /// GETs' own rules.
    retry: RetryConfig,
}

impl PageReader {
    /// A reader of the pages of `server` (`scheme://host[:port]`), sending `headers` (the
    /// login) with each request, within the limits of `transfer` (the store bounds each
    /// page's whole GET, retries included, by its timeout).
    pub fn new(server: &str, transfer: &Transfer, headers: http::HeaderMap) -> Result<Self> {
        let refuse = |why: String| Error::Url {
            url: server.to_string(),
            why,
        };
        let server = reqwest::Url::parse(server).map_err(|e| refuse(e.to_string()))?;
        // Redirects keep the login only on the same server (reqwest drops it elsewhere).
        let client = reqwest::Client::builder()
            .connect_timeout(transfer.connect_timeout())
            .default_headers(headers)
            .user_agent(concat!("nczarr-rs/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| refuse(e.to_string()))?;
        let (_, retry) = transfer.client_config();
        Ok(PageReader {
            client,
            server,
            retry,
        })
    }

    /// The answer to a GET of `url`, sent again while it fails in a way that may pass (no
    /// connection, a server error (5xx), throttling (429) or a request timeout (408)), after
    /// waits that grow as the object GETs' do, as long as the retries and the time allowed
    /// for them last. The last answer or failure is returned.
    async fn answer(&self, url: &reqwest::Url) -> reqwest::Result<reqwest::Response> {
        let started = Instant::now();
        let backoff = &self.retry.backoff;
        let mut wait = backoff.init_backoff;
        let mut tries_left = self.retry.max_retries;
        loop {
            let answer = self.client.get(url.clone()).send().await;
            let may_pass = match &answer {
                Ok(a) => a.status().is_server_error() || a.status() == 429 || a.status() == 408,
                Err(e) => e.is_connect() || e.is_timeout() || e.is_request(),
            };
            if !may_pass || tries_left == 0 || started.elapsed() + wait >= self.retry.retry_timeout
            {
                return answer;
            }
            tries_left -= 1;
            tokio::time::sleep(wait).await;
            wait = wait.mul_f64(backoff.base).min(backoff.max_backoff);
        }
    }

    /// The address of the page of `dir` (path segments escaped, `/` last).
    fn page_url(&self, dir: &str) -> std::result::Result<reqwest::Url, object_store::Error> {
        let mut url = self.server.clone();
        url.path_segments_mut()
            .map_err(|()| failure(format!("{} cannot hold a path", self.server)))?
            .clear()
            .extend(dir.split('/').filter(|s| !s.is_empty()))
            .push("");
        Ok(url)
    }
}

/// A failure as the object-store client reports its own, so that the store reads it alike.
fn failure(why: String) -> object_store::Error {
    object_store::Error::Generic {
        store: "HTTP",
        source: why.into(),
    }
}

/// True for a content type an index page can have: HTML, or none given.
fn is_page(content_type: Option<&http::HeaderValue>) -> bool {
    let Some(value) = content_type else {
        return true;
    };
    let Ok(text) = value.to_str() else {
        return false;
    };
    let essence = text.split(';').next().unwrap_or_default().trim();
    essence.eq_ignore_ascii_case("text/html")
        || essence.eq_ignore_ascii_case("application/xhtml+xml")
}

#[async_trait]
impl IndexPages for PageReader {
    /// Refused: any status of 400-499 but 408 and 429 (a missing page, a login refused), an
    /// answer that is no HTML, a page larger than [`MOST_PAGE_BYTES`]. Failed (may pass): no
    /// connection, a server error, throttling or a timeout after the retries, an answer cut
    /// short.
    async fn page(&self, dir: &str) -> std::result::Result<IndexPage, object_store::Error> {
        let url = self.page_url(dir)?;
        let asked = format!("GET {url}");
        let lost = |e: reqwest::Error| failure(format!("{asked}: {}", full_chain(&e)));
        let mut answer = self.answer(&url).await.map_err(lost)?;
        let status = answer.status();
        if status.is_client_error() && status != 429 && status != 408 {
            return Ok(IndexPage::Refused(format!("{asked}: {status}")));
        }
        if !status.is_success() {
            return Err(failure(format!(
                "{asked}: server returned non-2xx status code: {status}"
            )));
        }
        let content_type = answer.headers().get(http::header::CONTENT_TYPE);
        if !is_page(content_type) {
            return Ok(IndexPage::Refused(format!(
                "{asked}: the answer is no HTML page ({content_type:?})"
            )));
        }
        let too_large = IndexPage::Refused(format!(
            "{asked}: the index page is larger than {MOST_PAGE_BYTES} bytes"
        ));
        if answer.content_length().is_some_and(|n| n > MOST_PAGE_BYTES) {
            return Ok(too_large);
        }
        let mut page = Vec::new();
        while let Some(piece) = answer.chunk().await.map_err(lost)? {
            if (page.len() + piece.len()) as u64 > MOST_PAGE_BYTES {
                return Ok(too_large);
            }
            page.extend_from_slice(&piece);
        }
        Ok(IndexPage::Found(page))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zmap::remote::runtime;
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;
    use std::time::Duration;

    fn reader(server: &str) -> PageReader {
        let transfer = Transfer::from_env(&|_| None).unwrap();
        PageReader::new(server, &transfer, http::HeaderMap::new()).unwrap()
    }

    /// A server on loopback that answers its connections, one request each, with `answers`
    /// in turn (head lines, then the body's pieces, each sent chunked when the head says
    /// so); returns its address and the request lines it received. It stops waiting for
    /// requests after a few seconds without one.
    fn serve(
        answers: Vec<(&'static str, Vec<Vec<u8>>)>,
    ) -> (String, std::thread::JoinHandle<Vec<String>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let address = format!("http://{}", listener.local_addr().unwrap());
        let served = std::thread::spawn(move || {
            let mut asked = Vec::new();
            for (head, pieces) in answers {
                let deadline = Instant::now() + Duration::from_secs(10);
                let mut stream = loop {
                    match listener.accept() {
                        Ok((stream, _)) => break stream,
                        Err(_) if Instant::now() < deadline => {
                            std::thread::sleep(Duration::from_millis(5));
                        }
                        Err(_) => return asked,
                    }
                };
                stream.set_nonblocking(false).unwrap();
                let mut lines = BufReader::new(stream.try_clone().unwrap()).lines();
                asked.push(lines.next().unwrap().unwrap());
                while lines.next().is_some_and(|l| !l.unwrap().is_empty()) {}
                let chunked = head.contains("chunked");
                let _ = stream.write_all(format!("{head}\r\nConnection: close\r\n\r\n").as_bytes());
                for piece in pieces {
                    let sent = if chunked {
                        let mut framed = format!("{:x}\r\n", piece.len()).into_bytes();
                        framed.extend_from_slice(&piece);
                        framed.extend_from_slice(b"\r\n");
                        stream.write_all(&framed)
                    } else {
                        stream.write_all(&piece)
                    };
                    if sent.is_err() {
                        break;
                    }
                }
                if chunked {
                    let _ = stream.write_all(b"0\r\n\r\n");
                }
            }
            asked
        });
        (address, served)
    }

    /// What a page GET came to, for comparing.
    #[derive(Debug, PartialEq)]
    enum Got {
        Page(Vec<u8>),
        Refused(String),
        Failed(String),
    }

    fn page_of(answers: Vec<(&'static str, Vec<Vec<u8>>)>) -> (Got, Vec<String>) {
        let (address, served) = serve(answers);
        let pages = reader(&address);
        let got = match runtime::run(async move { pages.page("data.zarr/a b").await }).unwrap() {
            Ok(IndexPage::Found(page)) => Got::Page(page),
            Ok(IndexPage::Refused(why)) => Got::Refused(why),
            Err(e) => Got::Failed(e.to_string()),
        };
        (got, served.join().unwrap())
    }

    const HTML_CHUNKED: &str =
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked";

    #[test]
    fn pages_sent_chunked_without_a_length_are_read() {
        let pieces = vec![b"<a href=\"x/\">".to_vec(), b"x/</a>".to_vec()];
        let (got, asked) = page_of(vec![(HTML_CHUNKED, pieces)]);
        assert_eq!(got, Got::Page(b"<a href=\"x/\">x/</a>".to_vec()));
        assert_eq!(asked, ["GET /data.zarr/a%20b/ HTTP/1.1"]);
    }

    #[test]
    fn missing_pages_refused_logins_and_answers_that_are_no_page_are_refusals() {
        for head in [
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0",
            "HTTP/1.1 403 Forbidden\r\nContent-Length: 0",
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2",
        ] {
            let (got, asked) = page_of(vec![(head, vec![b"[]".to_vec()])]);
            assert!(matches!(got, Got::Refused(_)), "{head}: {got:?}");
            assert_eq!(asked.len(), 1, "{head}");
        }
    }

    #[test]
    fn pages_past_the_bound_are_refused_however_they_are_sent() {
        let piece = vec![b'x'; 1 << 20];
        let endless = vec![piece; (MOST_PAGE_BYTES >> 20) as usize + 2];
        let (got, _) = page_of(vec![(HTML_CHUNKED, endless)]);
        assert!(matches!(&got, Got::Refused(why) if why.contains("larger than")));
        let announced = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 40000000";
        let (got, _) = page_of(vec![(announced, vec![])]);
        assert!(matches!(&got, Got::Refused(why) if why.contains("larger than")));
    }

    #[test]
    fn server_errors_are_asked_again_and_fail_when_they_last() {
        let busy = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0";
        let page = || (HTML_CHUNKED, vec![b"<a href=\"y\">y</a>".to_vec()]);
        let (got, asked) = page_of(vec![(busy, vec![]), (busy, vec![]), page()]);
        assert_eq!(got, Got::Page(b"<a href=\"y\">y</a>".to_vec()));
        assert_eq!(asked.len(), 3);
        let retries = Transfer::from_env(&|_| None).unwrap().retries;
        let (got, asked) = page_of(vec![(busy, vec![]); retries + 1]);
        assert!(
            matches!(&got, Got::Failed(why) if why.contains("503")),
            "{got:?}"
        );
        assert_eq!(asked.len(), retries + 1);
    }

    #[test]
    fn a_page_cut_short_fails() {
        let cut = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100";
        let (got, _) = page_of(vec![(cut, vec![b"<a href=".to_vec()])]);
        assert!(matches!(got, Got::Failed(_)), "{got:?}");
    }

    #[test]
    fn page_addresses_escape_their_segments_and_end_with_a_slash() {
        let r = reader("http://127.0.0.1:8080");
        assert_eq!(r.page_url("").unwrap().as_str(), "http://127.0.0.1:8080/");
        assert_eq!(
            r.page_url("pub/x y.zarr/a#b").unwrap().as_str(),
            "http://127.0.0.1:8080/pub/x%20y.zarr/a%23b/"
        );
        assert_eq!(
            reader("https://[::1]").page_url("d").unwrap().as_str(),
            "https://[::1]/d/"
        );
    }

    #[test]
    fn only_html_is_read_as_a_page() {
        let value = |t: &str| http::HeaderValue::from_str(t).unwrap();
        assert!(is_page(None));
        assert!(is_page(Some(&value("text/html"))));
        assert!(is_page(Some(&value("Text/HTML; charset=utf-8"))));
        assert!(is_page(Some(&value("application/xhtml+xml"))));
        assert!(!is_page(Some(&value("application/json"))));
        assert!(!is_page(Some(&value("application/octet-stream"))));
        assert!(!is_page(Some(&value("text/plain"))));
    }
}
