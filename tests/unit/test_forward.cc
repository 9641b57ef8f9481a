// test_forward.cc - the node side of I/O forwarding (engine/exec/forward.h): the
// limit on what one task may forward.
//
// Checked: a task's pipe data up to its limit is forwarded whole; one byte
// past it, the read fails with EFBIG, the pipe's data is freed at once (not
// held until the task ends), the writer gets EPIPE once the pipe is closed,
// and fwd_finish() fails the task with a message naming it and the limit,
// even when the task itself then failed (it died of the closed pipe); -F
// files count toward the same limit, with the pipes.  Before the limit, a
// task could forward 4 GiB + 100 bytes and have 100 of them written while
// it counted as a success (the block's u32 length), and 2-4 GiB on another
// node aborted the whole job (MPI_Isend's int count).
#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <string>
#include <thread>

#include <unistd.h>

#include "engine/exec/forward.h"
#include "io/dag.h"
#include "io/msg.h"
#include "testutil.h"

namespace
{

// A task's forwards as msg_task.fwd packs them: kind, src NUL, dest NUL.
std::string packed(const std::vector<std::tuple<uint32_t, std::string, std::string>> &fwds)
{
    std::string s;
    for (const auto &[kind, src, dest] : fwds) {
        s += static_cast<char>(kind);
        s += src;
        s += '\0';
        s += dest;
        s += '\0';
    }
    return s;
}

class ForwardLimitTest : public testutil::TempDirTest
{
  protected:
    ForwardLimitTest() : TempDirTest("pmc-forward") {}

    void SetUp() override
    {
        old_pipe_ = signal(SIGPIPE, SIG_IGN); // the writer sees EPIPE instead
    }

    void TearDown() override
    {
        if (writer_.joinable())
            writer_.join();
        fwd_free(&f_);
        msg_free(&pack_);
        signal(SIGPIPE, old_pipe_);
    }

    // Prepare task "big" with these forwards and a limit of `limit` bytes.
    void prepare(const std::vector<std::tuple<uint32_t, std::string, std::string>> &fwds,
                 size_t limit)
    {
        fwd_ = packed(fwds);
        msg_task t{};
        t.id = 1;
        t.name = "big";
        t.nfwd = static_cast<uint32_t>(fwds.size());
        t.fwd = fwd_.data();
        t.fwd_len = fwd_.size();
        pmc_error err{};
        ASSERT_EQ(fwd_prepare(&f_, &t, &err), 0) << err.text;
        f_.limit = limit;
    }

    // Write n bytes into pipe k's write end from a thread, then close it;
    // the thread's last write error lands in write_errno_.
    void write_into(uint32_t k, size_t n)
    {
        int fd = f_.e[k].wfd;
        f_.e[k].wfd = -1;
        writer_ = std::thread([this, fd, n] {
            std::string chunk(4096, 'x');
            for (size_t done = 0; done < n;) {
                ssize_t w = write(fd, chunk.data(), std::min(chunk.size(), n - done));
                if (w < 0) {
                    write_errno_ = errno;
                    break;
                }
                done += static_cast<size_t>(w);
            }
            close(fd);
        });
    }

    // Read pipe k until it ends or fails (the read end is non-blocking),
    // then close it, as the engine's readers do: fwd_read_pipe()'s last
    // answer, 1 or -1.
    int read_to_end(uint32_t k)
    {
        int rc;
        while ((rc = fwd_read_pipe(&f_, k)) == 0)
            usleep(200);
        fwd_close_pipe(&f_, k);
        return rc;
    }

    // A task with 500 bytes through a pipe and a -F file (data.txt) of
    // file_bytes, its limit 1000 bytes: fwd_finish()'s answer, its error
    // in *text.
    int pipe_and_file(size_t file_bytes, std::string *text)
    {
        std::string src = file("data.txt", std::string(file_bytes, 'f'));
        prepare({{DAG_FORWARD_PIPE, "OUT", path("out")}, {DAG_FORWARD_FILE, src, path("dest")}},
                1000);
        write_into(0, 500);
        EXPECT_EQ(read_to_end(0), 1);
        writer_.join();
        pmc_error err{};
        int rc = fwd_finish(&f_, "big", 0, &pack_, &err);
        *text = rc < 0 ? err.text : "";
        return rc;
    }

    fwd_task f_{};
    msgbuf pack_{};
    std::string fwd_;
    std::thread writer_;
    int write_errno_ = 0;
    void (*old_pipe_)(int) = SIG_DFL;
};

TEST_F(ForwardLimitTest, DataUpToTheLimitIsForwardedWhole)
{
    prepare({{DAG_FORWARD_PIPE, "OUT", path("out")}}, 100000);
    write_into(0, 100000);
    EXPECT_EQ(read_to_end(0), 1);
    writer_.join();
    EXPECT_EQ(write_errno_, 0);
    pmc_error err{};
    ASSERT_EQ(fwd_finish(&f_, "big", 0, &pack_, &err), 0) << err.text;
    ASSERT_EQ(pack_.count, 1u);
    EXPECT_EQ(pack_.len, 8u + 100000u); // u32 index, u32 length, the bytes
}

TEST_F(ForwardLimitTest, PipePastTheLimitIsClosedAndFailsTheTask)
{
    prepare({{DAG_FORWARD_PIPE, "OUT", path("out")}}, 1u << 20);
    write_into(0, 3u << 20);
    EXPECT_EQ(read_to_end(0), -1);
    EXPECT_EQ(f_.e[0].lost, EFBIG);
    EXPECT_EQ(f_.e[0].data, nullptr) << "the data past the limit is still held";
    EXPECT_EQ(f_.e[0].len, 0u);
    EXPECT_EQ(f_.held, 0u);
    writer_.join();
    EXPECT_EQ(write_errno_, EPIPE) << "the writer did not see its reader go";
    pmc_error err{};
    ASSERT_EQ(fwd_finish(&f_, "big", 0, &pack_, &err), -1);
    EXPECT_EQ(std::string(err.text),
              "Task big: forwarded more than 1 MB, the most one task may forward (-f and -F "
              "together): its data is dropped and it fails");
    EXPECT_EQ(pack_.count, 0u);
}

// Once one pipe passed the limit the task fails: its other pipes hold
// nothing more (they are closed at their next read), so that a failed task
// does not fill the node's memory through them up to the limit again.
TEST_F(ForwardLimitTest, PastTheLimitOnePipeTheOthersHoldNothing)
{
    prepare({{DAG_FORWARD_PIPE, "A", path("a")}, {DAG_FORWARD_PIPE, "B", path("b")}}, 100000);
    ASSERT_EQ(write(f_.e[1].wfd, "held", 4), 4);
    ASSERT_EQ(fwd_read_pipe(&f_, 1), 0);
    EXPECT_EQ(f_.e[1].len, 4u);
    write_into(0, 300000);
    EXPECT_EQ(read_to_end(0), -1);
    writer_.join();
    ASSERT_EQ(write(f_.e[1].wfd, "more", 4), 4);
    EXPECT_EQ(fwd_read_pipe(&f_, 1), -1);
    EXPECT_EQ(f_.e[1].lost, EFBIG);
    EXPECT_EQ(f_.e[1].data, nullptr) << "the other pipe still holds data";
    EXPECT_EQ(f_.held, 0u);
}

TEST_F(ForwardLimitTest, PastTheLimitIsReportedWhenTheTaskDiedOfItsClosedPipe)
{
    prepare({{DAG_FORWARD_PIPE, "OUT", path("out")}}, 3u << 20);
    write_into(0, 4u << 20);
    EXPECT_EQ(read_to_end(0), -1);
    writer_.join();
    pmc_error err{};
    EXPECT_EQ(fwd_finish(&f_, "big", SIGPIPE, &pack_, &err), -1);
    EXPECT_NE(std::string(err.text).find("forwarded more than 3 MB"), std::string::npos)
        << err.text;
}

TEST_F(ForwardLimitTest, FilesCountTowardTheLimitWithThePipes)
{
    std::string text;
    ASSERT_EQ(pipe_and_file(600, &text), -1);
    EXPECT_NE(text.find("Task big: forwarded more than"), std::string::npos) << text;
    EXPECT_NE(access(path("data.txt").c_str(), F_OK), 0)
        << "the -F file of a failed task was not deleted";
}

TEST_F(ForwardLimitTest, FilesWithinTheLimitAreForwarded)
{
    std::string text;
    ASSERT_EQ(pipe_and_file(400, &text), 0) << text;
    EXPECT_EQ(pack_.count, 2u);
    EXPECT_EQ(pack_.len, 8u + 500u + 8u + 400u);
}

} // namespace
