#include "serving/hub_download.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "serving/load_progress.h"

namespace flashdraft::serving {
namespace fs = std::filesystem;

namespace {

constexpr int kAttempts = 4;  // per file: the first try and resumes after transport errors

// What the hub says about one file: HEAD .../resolve/REV/FILE.
struct FileMeta {
  std::string commit;  // X-Repo-Commit
  std::string etag;    // X-Linked-Etag (LFS: the sha256) or ETag, unquoted
  std::optional<uint64_t> size;  // X-Linked-Size or Content-Length
};

struct Response {
  long status = 0;
  std::map<std::string, std::string> headers;  // of the last response, lowercased names
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* r = static_cast<Response*>(user);
  std::string line(data, size * n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (line.rfind("HTTP/", 0) == 0) {
    r->headers.clear();  // a new response (after a redirect or a 100 Continue)
  } else if (auto colon = line.find(':'); colon != std::string::npos) {
    std::string name = line.substr(0, colon), value = line.substr(colon + 1);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    value.erase(0, value.find_first_not_of(" \t"));
    r->headers[name] = value;
  }
  return size * n;
}

std::string header(const Response& r, const std::string& name) {
  auto it = r.headers.find(name);
  return it == r.headers.end() ? "" : it->second;
}

std::string unquote_etag(std::string e) {
  if (e.rfind("W/", 0) == 0) e.erase(0, 2);
  if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
  return e;
}

// One easy handle with the settings every request shares.
class Curl {
 public:
  explicit Curl(const std::string& token) {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    h_ = curl_easy_init();
    if (!h_) throw Error("curl_easy_init failed");
    headers_ = curl_slist_append(headers_, "User-Agent: flashdraft");
    if (!token.empty()) headers_ = curl_slist_append(headers_, ("Authorization: Bearer " + token).c_str());
  }
  ~Curl() {
    curl_slist_free_all(headers_);
    curl_easy_cleanup(h_);
  }
  Curl(const Curl&) = delete;
  Curl& operator=(const Curl&) = delete;

  // Resets per-request options; extra_headers come after the shared ones.
  curl_slist* prepare(const std::string& url, Response& response, const std::vector<std::string>& extra_headers) {
    curl_easy_reset(h_);
    curl_slist_free_all(request_headers_);
    request_headers_ = nullptr;
    for (curl_slist* h = headers_; h; h = h->next) request_headers_ = curl_slist_append(request_headers_, h->data);
    for (const auto& h : extra_headers) request_headers_ = curl_slist_append(request_headers_, h.c_str());
    curl_easy_setopt(h_, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h_, CURLOPT_HTTPHEADER, request_headers_);
    curl_easy_setopt(h_, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h_, CURLOPT_HEADERDATA, &response);
    curl_easy_setopt(h_, CURLOPT_ERRORBUFFER, error_);
    curl_easy_setopt(h_, CURLOPT_CONNECTTIMEOUT, 20L);
    // A stalled transfer (under 1 KB/s for 60 s) is an error, resumed by the next attempt.
    curl_easy_setopt(h_, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(h_, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(h_, CURLOPT_NOSIGNAL, 1L);
    error_[0] = '\0';
    return request_headers_;
  }
  CURLcode perform(Response& response) {
    CURLcode code = curl_easy_perform(h_);
    curl_easy_getinfo(h_, CURLINFO_RESPONSE_CODE, &response.status);
    return code;
  }
  std::string error(CURLcode code) const { return error_[0] ? error_ : curl_easy_strerror(code); }
  CURL* handle() { return h_; }

 private:
  CURL* h_ = nullptr;
  curl_slist* headers_ = nullptr;
  curl_slist* request_headers_ = nullptr;
  char error_[CURL_ERROR_SIZE] = {};
};

// Appends a response body to a file descriptor, from `offset`; a server
// that ignores the Range header (200 instead of 206) starts it over.
struct BodySink {
  int fd = -1;
  uint64_t offset = 0;    // bytes in the file
  bool started = false;
  long status = 0;
  int write_errno = 0;    // set when a write failed (disk full, file size limit)
  CURL* curl = nullptr;
  std::function<void(uint64_t)> progress;
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* s = static_cast<BodySink*>(user);
  const size_t bytes = size * n;
  if (!s->started) {
    s->started = true;
    curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &s->status);
    if (s->status != 200 && s->status != 206) return 0;  // an error page is not the file
    if (s->status == 200 && s->offset > 0) {
      if (ftruncate(s->fd, 0) != 0 || lseek(s->fd, 0, SEEK_SET) != 0) {
        s->write_errno = errno;
        return 0;
      }
      s->offset = 0;
    }
  }
  size_t done = 0;
  while (done < bytes) {
    const ssize_t w = ::write(s->fd, data + done, bytes - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      s->write_errno = errno;
      return 0;
    }
    done += static_cast<size_t>(w);
  }
  s->offset += bytes;
  if (s->progress) s->progress(s->offset);
  return bytes;
}

// Percent-encodes a revision or file path for a URL ('/' kept in file paths).
std::string url_encode(const std::string& s, bool keep_slash) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

// An exclusive lock on a file, released when the object goes away.
class FileLock {
 public:
  explicit FileLock(const fs::path& path) {
    fs::create_directories(path.parent_path());
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
    if (fd_ >= 0) flock(fd_, LOCK_EX);
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

void write_file_atomically(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  const fs::path tmp = path.string() + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) throw Error(fmt::format("cannot write {}: {}", tmp.string(), std::strerror(errno)));
  }
  fs::rename(tmp, path);
}

class Downloader {
 public:
  Downloader(const HubRequest& r, std::FILE* log)
      : r_(r), log_(log), curl_(r.token), repo_(hub_repo_dir(r.cache, r.id)),
        progress_(log ? log : stderr, log && isatty(fileno(log)) != 0, std::chrono::milliseconds(300), "downloading") {}

  fs::path run() {
    const FileMeta config = head_required("config.json");
    commit_ = config.commit;
    snapshot_ = repo_ / "snapshots" / commit_;
    if (log_) {
      fmt::print(log_, "flashdraft: downloading {} ({} = commit {}) from {} into {}\n", r_.id, r_.revision,
                 commit_.substr(0, 12), r_.endpoint, repo_.string());
      std::fflush(log_);
    }
    std::vector<std::pair<std::string, FileMeta>> wanted;
    if (!present("config.json")) wanted.emplace_back("config.json", config);
    std::vector<std::string> optional = {"generation_config.json", "tokenizer_config.json", "chat_template.jinja"};
    if (r_.needs.tokenizer) {
      add_required("tokenizer.json", wanted);
    } else {
      optional.push_back("tokenizer.json");
    }
    if (r_.needs.weights) optional.push_back("model.safetensors.index.json");
    for (const auto& name : optional) add_optional(name, wanted);
    fetch_all(wanted);

    if (r_.needs.weights) {
      wanted.clear();
      const fs::path index = snapshot_ / "model.safetensors.index.json";
      if (fs::exists(index)) {
        for (const auto& shard : shards_of(index)) add_required(shard, wanted);
      } else {
        add_required("model.safetensors", wanted);
      }
      fetch_all(wanted);
    }
    if (r_.revision != commit_) write_file_atomically(repo_ / "refs" / r_.revision, commit_);

    progress_.clear();
    if (log_) {
      fmt::print(log_, "flashdraft: downloaded {:.1f} MB ({} files) of {} in {:.1f} s\n", megabytes(fetched_bytes_),
                 fetched_files_, r_.id, progress_.elapsed_seconds());
      std::fflush(log_);
    }
    return snapshot_;
  }

 private:
  std::string url(const std::string& file) const {
    return fmt::format("{}/{}/resolve/{}/{}", r_.endpoint, r_.id, url_encode(r_.revision, false),
                       url_encode(file, true));
  }

  bool present(const std::string& file) const {
    std::error_code ec;
    return fs::is_regular_file(snapshot_ / file, ec);
  }
  bool known_absent(const std::string& file) const {
    std::error_code ec;
    return fs::exists(repo_ / ".no_exist" / commit_ / file, ec);
  }

  // HEAD, following only redirects within the hub (huggingface_hub does the
  // same: a CDN redirect's target is not the file's metadata).
  std::optional<FileMeta> head(const std::string& file, Response& response) {
    std::string target = url(file);
    for (int hop = 0; hop < 5; ++hop) {
      response = Response{};
      curl_.prepare(target, response, {"Accept-Encoding: identity"});
      curl_easy_setopt(curl_.handle(), CURLOPT_NOBODY, 1L);
      const CURLcode code = curl_.perform(response);
      if (code != CURLE_OK) throw unreachable(file, code);
      const std::string location = header(response, "location");
      if (response.status >= 300 && response.status < 400 && !location.empty() && location.front() == '/') {
        target = origin() + location;
        continue;
      }
      break;
    }
    if (response.status == 404) return std::nullopt;
    if (response.status >= 400) throw http_error(file, response);
    FileMeta m;
    m.commit = header(response, "x-repo-commit");
    m.etag = unquote_etag(header(response, "x-linked-etag"));
    if (m.etag.empty()) m.etag = unquote_etag(header(response, "etag"));
    std::string size = header(response, "x-linked-size");
    if (size.empty()) size = header(response, "content-length");
    if (!size.empty()) m.size = std::stoull(size);
    if (m.commit.empty() || m.etag.empty()) {
      throw Error(fmt::format("{} answered without {}: is HF_ENDPOINT ({}) a Hugging Face hub?", url(file),
                              m.commit.empty() ? "X-Repo-Commit" : "an ETag", r_.endpoint));
    }
    if (m.etag.find('/') != std::string::npos || m.etag.find("..") != std::string::npos)
      throw Error(fmt::format("{} answered with an unusable ETag {:?}", url(file), m.etag));
    return m;
  }

  FileMeta head_required(const std::string& file) {
    Response response;
    auto m = head(file, response);
    if (!m) throw http_error(file, response);
    return *m;
  }

  void add_required(const std::string& file, std::vector<std::pair<std::string, FileMeta>>& wanted) {
    if (!present(file)) wanted.emplace_back(file, checked_commit(file, head_required(file)));
  }

  void add_optional(const std::string& file, std::vector<std::pair<std::string, FileMeta>>& wanted) {
    if (present(file) || known_absent(file)) return;
    Response response;
    if (auto m = head(file, response)) {
      wanted.emplace_back(file, checked_commit(file, *m));
    } else {
      // As huggingface_hub records it, so the next run does not ask again.
      write_file_atomically(repo_ / ".no_exist" / commit_ / file, "");
    }
  }

  // A branch moving between two requests would mix two commits in one snapshot.
  FileMeta checked_commit(const std::string& file, FileMeta m) const {
    if (m.commit != commit_) {
      throw Error(fmt::format("revision {} moved from commit {} to {} while downloading ({}); run again",
                              r_.revision, commit_, m.commit, file));
    }
    return m;
  }

  std::vector<std::string> shards_of(const fs::path& index) const {
    std::ifstream in(index);
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      throw Error(fmt::format("{} has no weight_map object", index.string()));
    std::set<std::string> shards;
    for (const auto& [name, shard] : j["weight_map"].items()) {
      const std::string s = shard.is_string() ? shard.get<std::string>() : "";
      if (s.empty() || s.front() == '/' || s.find("..") != std::string::npos)
        throw Error(fmt::format("{}: weight_map[{:?}] is not a file name in the repository", index.string(), name));
      shards.insert(s);
    }
    return {shards.begin(), shards.end()};
  }

  void fetch_all(const std::vector<std::pair<std::string, FileMeta>>& wanted) {
    for (const auto& [file, meta] : wanted) total_bytes_ += meta.size.value_or(0);
    for (const auto& [file, meta] : wanted) fetch(file, meta);
  }

  void fetch(const std::string& file, const FileMeta& meta) {
    const fs::path blob = repo_ / "blobs" / meta.etag;
    std::error_code ec;
    const auto complete = [&] {
      return fs::is_regular_file(blob, ec) && (!meta.size || fs::file_size(blob, ec) == *meta.size);
    };
    if (!complete()) {
      FileLock lock(r_.cache / ".locks" / repo_.filename() / (meta.etag + ".lock"));
      if (!complete()) {  // not even after another process held the lock
        fs::remove(blob, ec);  // a blob of the wrong size is not this file
        download_blob(file, meta, blob);
      }
    }
    link_into_snapshot(file, blob);
    done_bytes_ += meta.size.value_or(0);
    ++fetched_files_;
  }

  void download_blob(const std::string& file, const FileMeta& meta, const fs::path& blob) {
    fs::create_directories(blob.parent_path());
    const fs::path part = blob.string() + ".incomplete";
    const int fd = ::open(part.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) throw Error(fmt::format("cannot open {}: {}", part.string(), std::strerror(errno)));
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};

    BodySink sink;
    sink.fd = fd;
    sink.curl = curl_.handle();
    sink.offset = static_cast<uint64_t>(::lseek(fd, 0, SEEK_END));
    const uint64_t base = done_bytes_;
    sink.progress = [&](uint64_t have) { progress_.update(base + have, std::max(total_bytes_, base + have)); };
    for (int attempt = 1;; ++attempt) {
      if (meta.size && sink.offset == *meta.size) break;  // complete from an earlier run
      if (meta.size && sink.offset > *meta.size) {
        // Longer than the file: not a prefix of it; start over.
        if (ftruncate(fd, 0) != 0) throw Error(fmt::format("cannot truncate {}", part.string()));
        sink.offset = 0;
      }
      Response response;
      std::vector<std::string> extra;
      if (sink.offset > 0) extra.push_back(fmt::format("Range: bytes={}-", sink.offset));
      curl_.prepare(url(file), response, extra);
      curl_easy_setopt(curl_.handle(), CURLOPT_FOLLOWLOCATION, 1L);
      curl_easy_setopt(curl_.handle(), CURLOPT_MAXREDIRS, 10L);
      curl_easy_setopt(curl_.handle(), CURLOPT_WRITEFUNCTION, on_body);
      curl_easy_setopt(curl_.handle(), CURLOPT_WRITEDATA, &sink);
      sink.started = false;
      const uint64_t before = sink.offset;
      const CURLcode code = curl_.perform(response);
      if (sink.write_errno != 0) {
        throw Error(fmt::format("writing {} failed after {:.1f} MB: {}; free space (or point HF_HUB_CACHE "
                                "elsewhere) and run again to resume",
                                part.string(), megabytes(sink.offset), std::strerror(sink.write_errno)));
      }
      if (response.status == 416) {  // nothing past offset: complete, or not a prefix of this file
        if (meta.size && sink.offset == *meta.size) break;
        if (ftruncate(fd, 0) != 0) throw Error(fmt::format("cannot truncate {}", part.string()));
        sink.offset = 0;
        continue;
      }
      if (response.status >= 400) throw http_error(file, response);
      if (code == CURLE_OK && (response.status == 200 || response.status == 206)) {
        if (!meta.size || sink.offset == *meta.size) break;
      }
      // A transport error or a short body: resume from what arrived.
      const std::string why = code != CURLE_OK ? curl_.error(code)
                                               : fmt::format("HTTP {} with {} of {} bytes", response.status,
                                                             sink.offset, meta.size.value_or(0));
      if (attempt == kAttempts) {
        throw Error(fmt::format("{} interrupted ({}) with {:.1f} of {:.1f} MB in {}; run again to resume", file,
                                why, megabytes(sink.offset), megabytes(meta.size.value_or(0)), part.string()));
      }
      if (sink.offset == before) std::this_thread::sleep_for(std::chrono::milliseconds(200 * attempt));
    }
    if (::fsync(fd) != 0) {
      throw Error(fmt::format("writing {} failed: {}; free space and run again to resume", part.string(),
                              std::strerror(errno)));
    }
    fs::rename(part, blob);
    fetched_bytes_ += sink.offset;
  }

  void link_into_snapshot(const std::string& file, const fs::path& blob) {
    const fs::path link = snapshot_ / file;
    fs::create_directories(link.parent_path());
    const fs::path tmp = link.string() + ".tmp-" + std::to_string(::getpid());
    std::error_code ec;
    fs::remove(tmp, ec);
    fs::create_symlink(fs::relative(blob, link.parent_path()), tmp, ec);
    if (ec) fs::copy_file(blob, tmp, fs::copy_options::overwrite_existing);  // no symlinks here: a copy
    fs::rename(tmp, link);
  }

  std::string origin() const {
    const size_t scheme = r_.endpoint.find("://");
    const size_t path = r_.endpoint.find('/', scheme == std::string::npos ? 0 : scheme + 3);
    return path == std::string::npos ? r_.endpoint : r_.endpoint.substr(0, path);
  }

  Error unreachable(const std::string& file, CURLcode code) const {
    return Error(fmt::format("cannot reach {} for {} ({}): set HF_ENDPOINT for a mirror, or HF_HUB_OFFLINE=1 "
                             "to use only the local cache",
                             r_.endpoint, file, curl_.error(code)));
  }

  Error http_error(const std::string& file, const Response& response) const {
    const std::string code = header(response, "x-error-code");
    const std::string& at = r_.endpoint;
    const std::string token = r_.token.empty() ? "no token is set (HF_TOKEN)" : "the token in HF_TOKEN cannot read it";
    switch (response.status) {
      case 401:
        return Error(fmt::format("{} answers 401 Unauthorized: no such model, or it is private or gated and {}", at,
                                 token));
      case 403:
        return Error(fmt::format("{} answers 403 Forbidden: a gated model; accept its terms on the hub with the "
                                 "account whose token is in HF_TOKEN",
                                 at));
      case 404:
        if (code == "RepoNotFound") return Error(fmt::format("{} has no such model (404)", at));
        if (code == "RevisionNotFound") return Error(fmt::format("{} has no revision {} (404)", at, r_.revision));
        return Error(fmt::format("{} has no {} in revision {} (404)", at, file, r_.revision));
      default:
        return Error(fmt::format("{} answers HTTP {} for {}", at, response.status, url(file)));
    }
  }

  const HubRequest& r_;
  std::FILE* log_;
  Curl curl_;
  fs::path repo_, snapshot_;
  std::string commit_;
  LoadProgress progress_;
  uint64_t total_bytes_ = 0, done_bytes_ = 0, fetched_bytes_ = 0;
  int fetched_files_ = 0;
};

}  // namespace

fs::path download_snapshot(const HubRequest& request, std::FILE* log) {
  try {
    return Downloader(request, log).run();
  } catch (const fs::filesystem_error& e) {
    throw Error(e.what());
  }
}

bool hub_download_available() { return true; }

}  // namespace flashdraft::serving
