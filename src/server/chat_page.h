// The chat page served at `/`: static HTML + JS (src/server/chat_page.html, embedded into the
// binary at build time), talking to /v1/chat/completions with streaming.
#pragma once

#include <string_view>

namespace augur::server {

std::string_view chat_page_html();

}  // namespace augur::server
