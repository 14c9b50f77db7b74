#include "hub_server.h"

#include <httplib.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

namespace flashdraft::serving::test {
namespace fs = std::filesystem;

struct HubServer::Impl {
  httplib::Server server;
  std::thread thread;
  int port = 0;
  mutable std::mutex mu;
  std::map<std::string, HubRepo> repos;
  std::vector<HubRequestLog> log;
  std::string cut_file;
  uint64_t cut_bytes = 0;
  int cut_times = 0;

  void handle(const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1].str() + "/" + req.matches[2].str();
    const std::string revision = req.matches[3], file = req.matches[4];
    HubRepo repo;
    bool cut_this = false;
    uint64_t cut_at = 0;
    {
      std::lock_guard<std::mutex> lock(mu);
      log.push_back({req.method, req.path, req.get_header_value("Range"), req.get_header_value("Authorization")});
      auto it = repos.find(id);
      if (it == repos.end()) {
        // The hub answers an unknown repository as it answers a private one.
        res.status = 401;
        res.set_header("X-Error-Code", "RepoNotFound");
        return;
      }
      repo = it->second;
      if (req.method == "GET" && file == cut_file && cut_times > 0) {
        --cut_times;
        cut_this = true;
        cut_at = cut_bytes;
      }
    }
    if (!repo.token.empty() && req.get_header_value("Authorization") != "Bearer " + repo.token) {
      res.status = 401;
      res.set_header("X-Error-Code", "RepoNotFound");
      return;
    }
    if (revision != "main" && revision != repo.commit) {
      res.status = 404;
      res.set_header("X-Error-Code", "RevisionNotFound");
      return;
    }
    const fs::path path = repo.dir / file;
    if (file.find("..") != std::string::npos || !fs::is_regular_file(path)) {
      res.status = 404;
      res.set_header("X-Error-Code", "EntryNotFound");
      res.set_header("X-Repo-Commit", repo.commit);
      return;
    }
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    auto contents = std::make_shared<std::string>(ss.str());
    res.set_header("X-Repo-Commit", repo.commit);
    const std::string etag = "\"" + etag_of(*contents) + "\"";
    if (path.extension() == ".safetensors") {  // as the hub describes LFS files
      res.set_header("X-Linked-Etag", etag);
      res.set_header("X-Linked-Size", std::to_string(contents->size()));
      res.set_header("ETag", "\"not-the-blob-id\"");
    } else {
      res.set_header("ETag", etag);
    }
    if (!cut_this) {
      res.set_content(*contents, "application/octet-stream");  // httplib applies Range requests
      return;
    }
    res.set_content_provider(contents->size(), "application/octet-stream",
                             [contents, cut_at](size_t offset, size_t length, httplib::DataSink& sink) {
                               const size_t n = std::min<size_t>(length, cut_at);
                               if (n > 0) sink.write(contents->data() + offset, n);
                               return false;  // the connection closes mid-body
                             });
  }
};

HubServer::HubServer() : impl_(std::make_unique<Impl>()) {
  Impl* impl = impl_.get();
  impl->server.Get(R"(/([^/]+)/([^/]+)/resolve/([^/]+)/(.+))",
                   [impl](const httplib::Request& req, httplib::Response& res) { impl->handle(req, res); });
  impl->port = impl->server.bind_to_any_port("127.0.0.1");
  impl->thread = std::thread([impl] { impl->server.listen_after_bind(); });
  while (!impl->server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

HubServer::~HubServer() {
  impl_->server.stop();
  impl_->thread.join();
}

std::string HubServer::endpoint() const { return "http://127.0.0.1:" + std::to_string(impl_->port); }

void HubServer::add_repo(const std::string& id, HubRepo repo) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->repos[id] = std::move(repo);
}

void HubServer::cut(const std::string& file, uint64_t bytes, int times) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->cut_file = file;
  impl_->cut_bytes = bytes;
  impl_->cut_times = times;
}

std::vector<HubRequestLog> HubServer::requests() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->log;
}

void HubServer::clear_requests() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->log.clear();
}

std::string HubServer::etag_of(const std::string& contents) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a: any stable id does for a test hub
  for (unsigned char c : contents) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace flashdraft::serving::test
