// A bare HTTP/1.1 client over a socket for tests that must misbehave: send a request, read only
// part of the answer, then hang up.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace augur::testing {

// Sends a POST of `body` to 127.0.0.1:port and reads until `until` has appeared `times` times
// in the answer (or the server closes); then closes the connection. Returns what was read.
// `headers`: extra header lines, each ending in "\r\n".
inline std::string post_and_hang_up(int port, const std::string& path, const std::string& body,
                                    const std::string& until, int times,
                                    const std::string& headers = "") {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string got;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string request =
        "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
        headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
        static_cast<ssize_t>(request.size())) {
      char buf[4096];
      int seen = 0;
      while (seen < times) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        got.append(buf, static_cast<size_t>(n));
        seen = 0;
        for (size_t at = got.find(until); at != std::string::npos; at = got.find(until, at + 1)) {
          ++seen;
        }
      }
    }
  }
  ::close(fd);
  return got;
}

}  // namespace augur::testing
