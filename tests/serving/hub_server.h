#pragma once
// A Hugging Face hub for tests, in process on 127.0.0.1 (cpp-httplib): serves
// local model directories under the hub's URL layout
//   GET/HEAD /ORG/NAME/resolve/REVISION/FILE
// with the headers huggingface_hub reads (X-Repo-Commit; ETag, or
// X-Linked-Etag / X-Linked-Size for the .safetensors files as for LFS files),
// Range requests, 401 for private repositories without the right bearer
// token, 401 RepoNotFound / 404 RevisionNotFound / 404 EntryNotFound as the
// hub answers them, and a fault: the body of a chosen file cut after some
// bytes for the next N GETs (the connection closes mid-body).
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace flashdraft::serving::test {

struct HubRepo {
  std::filesystem::path dir;  // the files served
  std::string commit;         // 40 hex digits
  std::string token;          // non-empty: private, needs "Authorization: Bearer <token>"
};

struct HubRequestLog {
  std::string method, path, range, authorization;
};

class HubServer {
 public:
  HubServer();
  ~HubServer();
  HubServer(const HubServer&) = delete;
  HubServer& operator=(const HubServer&) = delete;

  std::string endpoint() const;  // http://127.0.0.1:PORT
  void add_repo(const std::string& id, HubRepo repo);
  // The next `times` GETs of `file` send only `bytes` bytes of their body.
  void cut(const std::string& file, uint64_t bytes, int times);
  std::vector<HubRequestLog> requests() const;
  void clear_requests();

  // The id a file's contents get (ETag / X-Linked-Etag), as the client must store it.
  static std::string etag_of(const std::string& contents);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flashdraft::serving::test
