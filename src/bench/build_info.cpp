#include "bench/build_info.h"

#include <openssl/evp.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <ctime>
#include <fstream>
#include <memory>
#include <thread>

#include "build_commit.h"
#include "common/error.h"
#include "kernels/isa.h"

namespace augur::bench {

nlohmann::json build_info() {
  return {{"commit", AUGUR_GIT_COMMIT},
          {"dirty", AUGUR_GIT_DIRTY != 0},
          {"compiler", AUGUR_COMPILER},
          {"build_type", AUGUR_BUILD_TYPE},
          {"flags", AUGUR_CXX_FLAGS}};
}

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}

}  // namespace

nlohmann::json machine_info(int threads_used) {
  utsname u{};
  std::string os = "unknown";
  if (uname(&u) == 0) os = std::string(u.sysname) + " " + u.release;
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  return {{"cpu", cpu_model()},
          {"cores", std::thread::hardware_concurrency()},
          {"threads_used", threads_used},
          {"memory_bytes", static_cast<int64_t>(pages) * page_size},
          {"isa", std::string(kernels::isa_name(kernels::current_isa()))},
          {"os", os}};
}

namespace {

// Hex digest of whatever `feed` hands to the context.
template <typename Feed>
std::string sha256_hex(Feed feed) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  AUGUR_CHECK(ctx && EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) == 1, "sha256 init");
  feed(ctx.get());
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest;
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), digest.data(), &len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

}  // namespace

std::string sha256_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path.string() + " to hash it");
  return sha256_hex([&](EVP_MD_CTX* ctx) {
    std::array<char, 1 << 16> buf;
    while (in) {
      in.read(buf.data(), buf.size());
      if (in.gcount() > 0) EVP_DigestUpdate(ctx, buf.data(), static_cast<size_t>(in.gcount()));
    }
  });
}

std::string sha256_bytes(std::span<const uint8_t> bytes) {
  return sha256_hex([&](EVP_MD_CTX* ctx) { EVP_DigestUpdate(ctx, bytes.data(), bytes.size()); });
}

int64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;  // "  1234 kB"
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

bool reset_peak_rss() {
  std::ofstream clear_refs("/proc/self/clear_refs");
  clear_refs << "5";
  clear_refs.flush();
  return static_cast<bool>(clear_refs);
}

std::string report_path(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path absolute = fs::weakly_canonical(fs::absolute(path, ec), ec);
  const fs::path cwd = fs::current_path(ec);
  if (!ec) {
    const fs::path relative = absolute.lexically_relative(cwd);
    if (!relative.empty() && *relative.begin() != "..") return relative.generic_string();
  }
  return path.filename().string();
}

std::string utc_timestamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace augur::bench
