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
use crate::zmap::remote::{IndexPages, Transfer};
use async_trait::async_trait;
use std::time::Duration;

/// Reads index pages of one server.
#[derive(Debug)]
pub struct PageReader {
    client: reqwest::Client,
    server: reqwest::Url,
    /// Times a GET that failed in a way that may pass is sent again.
    retries: usize,
}

/// The wait before the first retry; each later one waits twice as long, up to [`LONGEST_WAIT`].
const FIRST_WAIT: Duration = Duration::from_millis(100);
const LONGEST_WAIT: Duration = Duration::from_secs(5);

impl PageReader {
    /// A reader of the pages of `server` (`scheme://host[:port]`), sending `headers` (the
    /// login) with each request, within the limits of `transfer`.
    pub fn new(server: &str, transfer: &Transfer, headers: http::HeaderMap) -> Result<Self> {
        let refuse = |why: String| Error::Url {
            url: server.to_string(),
            why,
        };
        let server = reqwest::Url::parse(server).map_err(|e| refuse(e.to_string()))?;
        // Redirects keep the login only on the same server (reqwest drops it elsewhere).
        let client = reqwest::Client::builder()
            .timeout(transfer.timeout)
            .connect_timeout(transfer.connect_timeout())
            .default_headers(headers)
            .build()
            .map_err(|e| refuse(e.to_string()))?;
        Ok(PageReader {
            client,
            server,
            retries: transfer.retries,
        })
    }

    /// The answer to a GET of `url`, sent again (after a wait that doubles each time) while it
    /// fails in a way that may pass: no connection or no answer, a server error (5xx) or
    /// throttling (429), at most `retries` times. The last answer or failure is returned.
    async fn answer(&self, url: &reqwest::Url) -> reqwest::Result<reqwest::Response> {
        let mut wait = FIRST_WAIT;
        let mut tries_left = self.retries;
        loop {
            let answer = self.client.get(url.clone()).send().await;
            let may_pass = match &answer {
                Ok(a) => a.status().is_server_error() || a.status() == 429,
                Err(e) => e.is_connect() || e.is_timeout() || e.is_request(),
            };
            if !may_pass || tries_left == 0 {
                return answer;
            }
            tries_left -= 1;
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(LONGEST_WAIT);
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

/// A failure as the object-store client reports its own, so that the store reads it alike
/// (its status code, when there is one, in the same words).
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
    async fn page(&self, dir: &str) -> std::result::Result<Option<Vec<u8>>, object_store::Error> {
        let url = self.page_url(dir)?;
        let asked = format!("GET {url}");
        let mut answer = self
            .answer(&url)
            .await
            .map_err(|e| failure(format!("{asked}: {}", full_chain(&e))))?;
        let status = answer.status();
        if status == http::StatusCode::NOT_FOUND || status == http::StatusCode::GONE {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(failure(format!(
                "{asked}: server returned non-2xx status code: {status}"
            )));
        }
        if !is_page(answer.headers().get(http::header::CONTENT_TYPE)) {
            return Ok(None);
        }
        let too_large = || {
            failure(format!(
                "{asked}: the index page is larger than {MOST_PAGE_BYTES} bytes"
            ))
        };
        if answer.content_length().is_some_and(|n| n > MOST_PAGE_BYTES) {
            return Err(too_large());
        }
        let mut page = Vec::new();
        while let Some(piece) = answer
            .chunk()
            .await
            .map_err(|e| failure(format!("{asked}: {}", full_chain(&e))))?
        {
            if (page.len() + piece.len()) as u64 > MOST_PAGE_BYTES {
                return Err(too_large());
            }
            page.extend_from_slice(&piece);
        }
        Ok(Some(page))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zmap::remote::runtime;
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;

    fn reader(server: &str) -> PageReader {
        let transfer = Transfer::from_env(&|_| None).unwrap();
        PageReader::new(server, &transfer, http::HeaderMap::new()).unwrap()
    }

    /// A server on loopback that answers its connections, one request each, with `answers`
    /// in turn (head lines, then the body's pieces, each sent chunked when the head says
    /// so); returns its address and the request lines it received.
    fn serve(
        answers: Vec<(&'static str, Vec<Vec<u8>>)>,
    ) -> (String, std::thread::JoinHandle<Vec<String>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = format!("http://{}", listener.local_addr().unwrap());
        let served = std::thread::spawn(move || {
            let mut asked = Vec::new();
            for (head, pieces) in answers {
                let (mut stream, _) = listener.accept().unwrap();
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

    fn page_of(
        answers: Vec<(&'static str, Vec<Vec<u8>>)>,
    ) -> (std::result::Result<Option<Vec<u8>>, String>, Vec<String>) {
        let (address, served) = serve(answers);
        let pages = reader(&address);
        let got = runtime::run(async move { pages.page("data.zarr/a b").await })
            .unwrap()
            .map_err(|e| e.to_string());
        (got, served.join().unwrap())
    }

    const HTML_CHUNKED: &str =
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked";

    #[test]
    fn pages_sent_chunked_without_a_length_are_read() {
        let pieces = vec![b"<a href=\"x/\">".to_vec(), b"x/</a>".to_vec()];
        let (got, asked) = page_of(vec![(HTML_CHUNKED, pieces)]);
        assert_eq!(got.unwrap().unwrap(), b"<a href=\"x/\">x/</a>");
        assert_eq!(asked, ["GET /data.zarr/a%20b/ HTTP/1.1"]);
    }

    #[test]
    fn missing_pages_and_answers_that_are_no_page_are_none() {
        let (got, _) = page_of(vec![(
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0",
            vec![],
        )]);
        assert_eq!(got.unwrap(), None);
        let json = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2";
        let (got, _) = page_of(vec![(json, vec![b"[]".to_vec()])]);
        assert_eq!(got.unwrap(), None);
    }

    #[test]
    fn pages_past_the_bound_are_refused_however_they_are_sent() {
        let piece = vec![b'x'; 1 << 20];
        let endless = vec![piece; (MOST_PAGE_BYTES >> 20) as usize + 2];
        let (got, _) = page_of(vec![(HTML_CHUNKED, endless)]);
        assert!(got.unwrap_err().contains("larger than"));
        let announced = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 40000000";
        let (got, _) = page_of(vec![(announced, vec![])]);
        assert!(got.unwrap_err().contains("larger than"));
    }

    #[test]
    fn server_errors_are_asked_again_and_refusals_are_not() {
        let busy = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0";
        let (got, asked) = page_of(vec![
            (busy, vec![]),
            (busy, vec![]),
            (HTML_CHUNKED, vec![b"<a href=\"y\">y</a>".to_vec()]),
        ]);
        assert_eq!(got.unwrap().unwrap(), b"<a href=\"y\">y</a>");
        assert_eq!(asked.len(), 3);
        let (got, asked) = page_of(vec![(
            "HTTP/1.1 403 Forbidden\r\nContent-Length: 0",
            vec![],
        )]);
        assert!(got.unwrap_err().contains("status code: 403"));
        assert_eq!(asked.len(), 1);
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
