// log_capture.h - io/log.h's output caught in a pipe for a test's scope.
#ifndef PMC_TEST_LOG_CAPTURE_H
#define PMC_TEST_LOG_CAPTURE_H

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <unistd.h>

#include "io/log.h"
#include "testutil.h"

// The log goes to a non-blocking pipe for the life of the object.
class LogCapture
{
  public:
    LogCapture()
    {
        if (pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0)
            ADD_FAILURE() << "pipe2: " << strerror(errno);
        fcntl(fds_[1], F_SETPIPE_SZ, 1 << 20);
        log_set_fd(fds_[1]);
    }
    ~LogCapture()
    {
        log_set_fd(2);
        close(fds_[0]);
        close(fds_[1]);
    }
    // Everything logged since the last call.
    std::string take()
    {
        return testutil::read_to_eof(fds_[0]);
    }

  private:
    int fds_[2] = {-1, -1};
};

#endif
