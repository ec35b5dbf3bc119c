// Ctrl-C handling for long commands: the first SIGINT asks the running loop to stop cleanly
// (it finishes the current step, prints what it has and its stats); a second one kills.
#pragma once

namespace augur::cli {

void install_interrupt_handler();
bool interrupted();

}  // namespace augur::cli
