#include "server/chat_page.h"

namespace augur::server {

std::string_view chat_page_html() {
  // Generated from src/server/chat_page.html by cmake/embed_text.cmake.
  static constexpr std::string_view kPage =
#include "chat_page_html.inc"
      ;
  return kPage;
}

}  // namespace augur::server
