/* The rendezvous of a launch without MPI (lib/dist/rendezvous.c, vt_dist_rendezvous): rank 0 on
 * a loopback port hands its blob (NCCL's id, here random bytes) to every other rank, each a
 * forked process.  Cases: 4 ranks, the others started before rank 0 listens (they retry); a
 * stray client that sends garbage first (dropped, the job goes on); another WORLD_SIZE (both
 * sides fail, naming it); a rank twice; a rank that never comes (rank 0 times out naming it);
 * no rank 0 (the others time out naming the address); rank 0 failed (the others are told);
 * bad arguments.  Exit 0 pass, 1 fail. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dist/comm.h"

static int fails;
#define CHECK(cond, ...)                                                                         \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                 \
            fprintf(stderr, __VA_ARGS__);                                                        \
            fprintf(stderr, "\n");                                                               \
            fails++;                                                                             \
        }                                                                                        \
    } while (0)

/* A port nothing listens on now (bound to 0 by the kernel, then released). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) ||
        getsockname(fd, (struct sockaddr *)&a, &len)) {
        perror("free_port");
        exit(1);
    }
    close(fd);
    return ntohs(a.sin_port);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum { BLOB = 132 };

/* Child: run rank `rank` of `size` and exit with 0 (got rank 0's blob, seeded `seed`), 2 (an
 * error whose text holds `want`), 3 (another error: printed), 4 (a wrong blob). */
static void child(int port, int rank, int size, int seed, double timeout, const char *want)
{
    unsigned char blob[BLOB] = {0};
    vt_status st = vt_dist_rendezvous("127.0.0.1", port, rank, size, blob, sizeof blob, 0,
                                      timeout);
    if (st) {
        if (want && strstr(vt_last_error(), want)) _exit(2);
        fprintf(stderr, "rank %d: %s\n", rank, vt_last_error());
        _exit(3);
    }
    for (int i = 0; i < BLOB; i++)
        if (blob[i] != (unsigned char)(seed + 7 * i)) _exit(4);
    _exit(0);
}

static pid_t spawn(int port, int rank, int size, int seed, double timeout, const char *want)
{
    pid_t p = fork();
    if (p == 0) child(port, rank, size, seed, timeout, want);
    return p;
}

static int reap(pid_t p)
{
    int ws = 0;
    if (waitpid(p, &ws, 0) != p) return -1;
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 100 + WTERMSIG(ws);
}

static vt_status root(int port, int size, int seed, int failed, double timeout)
{
    unsigned char blob[BLOB];
    for (int i = 0; i < BLOB; i++) blob[i] = (unsigned char)(seed + 7 * i);
    return vt_dist_rendezvous("127.0.0.1", port, 0, size, blob, sizeof blob, failed, timeout);
}

/* A forked client of our own: connects to the port (retrying while nothing listens), sends
 * msg, writes a byte to `notify` (when >= 0), reads an answer when `answer` (until rank 0
 * closes), closes; exits 0, or 1 when it never got through. */
static pid_t raw_client(int port, const unsigned char *msg, size_t n, int answer, int notify)
{
    pid_t p = fork();
    if (p) return p;
    for (int tries = 0; tries < 100; tries++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {0};
        a.sin_family = AF_INET;
        a.sin_port = htons((unsigned short)port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
            char reply[16];
            int sent = write(fd, msg, n) == (ssize_t)n;
            if (notify >= 0) (void)!write(notify, "x", 1);
            if (sent && answer) (void)!read(fd, reply, sizeof reply);
            close(fd);
            _exit(0);
        }
        close(fd);
        usleep(20 * 1000);
    }
    _exit(1);
}

static void case_four_ranks(void)
{
    int port = free_port(), pfd[2];
    if (pipe(pfd)) {
        perror("pipe");
        exit(1);
    }
    pid_t kids[3];
    for (int r = 1; r < 3; r++) kids[r - 1] = spawn(port, r, 4, 11, 20, NULL);
    usleep(300 * 1000); /* the others retry until rank 0 listens */
    /* a stray client: garbage, then closed; rank 0 must drop it and go on.  Rank 3 comes once
     * it has connected (or given up), so that rank 0 cannot finish and close before it does */
    pid_t stray = raw_client(port, (const unsigned char *)"GET / HTTP/1.0\r\n\r\n", 18, 0,
                             pfd[1]);
    kids[2] = fork();
    if (kids[2] == 0) {
        char c;
        close(pfd[1]);
        (void)!read(pfd[0], &c, 1);
        child(port, 3, 4, 11, 20, NULL);
    }
    close(pfd[0]);
    close(pfd[1]);
    vt_status st = root(port, 4, 11, 0, 20);
    CHECK(st == VT_OK, "4 ranks: rank 0: %s", vt_last_error());
    for (int r = 1; r < 4; r++) {
        int rc = reap(kids[r - 1]);
        CHECK(rc == 0, "4 ranks: rank %d ended %d (4: wrong blob)", r, rc);
    }
    CHECK(reap(stray) == 0, "the stray client could not connect");
}

static void case_world_mismatch(void)
{
    int port = free_port();
    pid_t k = spawn(port, 1, 3, 5, 10, "refused rank 1 of 3");
    vt_status st = root(port, 2, 5, 0, 10);
    CHECK(st == VT_ERR_IO && strstr(vt_last_error(), "WORLD_SIZE=3") &&
              strstr(vt_last_error(), "has 2"),
          "world mismatch: rank 0: %d '%s'", st, vt_last_error());
    CHECK(reap(k) == 2, "world mismatch: rank 1 was not told why");
}

static void case_duplicate(void)
{
    int port = free_port();
    pid_t a = spawn(port, 1, 3, 5, 10, "already has");
    pid_t b = spawn(port, 1, 3, 5, 10, "already has");
    vt_status st = root(port, 3, 5, 0, 10);
    CHECK(st == VT_ERR_IO && strstr(vt_last_error(), "RANK=1"), "a rank twice: %d '%s'", st,
          vt_last_error());
    int ra = reap(a), rb = reap(b);
    /* whichever came second is refused; the first got its blob */
    CHECK((ra == 0 && rb == 2) || (ra == 2 && rb == 0),
          "a rank twice: the ranks ended %d and %d", ra, rb);
}

static void case_missing_rank(void)
{
    int port = free_port();
    pid_t k = spawn(port, 2, 4, 5, 10, NULL);
    double t0 = now_s();
    vt_status st = root(port, 4, 5, 0, 1.5);
    double took = now_s() - t0;
    CHECK(st == VT_ERR_IO && strstr(vt_last_error(), "ranks 1,3 never connected"),
          "missing ranks: %d '%s'", st, vt_last_error());
    CHECK(took > 1.2 && took < 5, "missing ranks: rank 0 gave up after %.1f s (timeout 1.5)",
          took);
    CHECK(reap(k) == 0, "missing ranks: rank 2 connected but got no blob");
}

static void case_no_root(void)
{
    int port = free_port();
    double t0 = now_s();
    pid_t k = spawn(port, 1, 2, 5, 1.0, "could not reach rank 0 at MASTER_ADDR=127.0.0.1");
    int rc = reap(k);
    CHECK(rc == 2, "no rank 0: rank 1 ended %d", rc);
    CHECK(now_s() - t0 < 5, "no rank 0: took %.1f s", now_s() - t0);
}

static void case_root_failed(void)
{
    int port = free_port();
    pid_t k = spawn(port, 1, 2, 5, 10, "rank 0 failed");
    vt_status st = root(port, 2, 5, 1, 10);
    CHECK(st == VT_OK, "rank 0 failed: the rendezvous itself: %s", vt_last_error());
    CHECK(reap(k) == 2, "rank 0 failed: rank 1 was not told");
}

/* rank 0 failed, and a process says it is rank 7 of 2: refused as out of range (it once
 * indexed past the table of ranks seen), rank 0 ends with the error */
static void case_root_failed_bad_rank(void)
{
    int port = free_port();
    /* the library refuses RANK=7 of 2 itself: a hand-made greeting (rendezvous.c's protocol) */
    static const unsigned char hello[20] = {'V', 'T', 'R', 'D', 'V', '0', '0', '1', 7, 0, 0, 0,
                                            2,   0,   0,   0,   BLOB, 0, 0, 0};
    pid_t k = raw_client(port, hello, sizeof hello, 1, -1);
    vt_status st = root(port, 2, 5, 1, 10);
    CHECK(st == VT_ERR_IO && strstr(vt_last_error(), "RANK=7"),
          "rank 0 failed, rank 7 of 2: status %d, '%s'", st, vt_last_error());
    reap(k);
}

static void case_bad_arguments(void)
{
    unsigned char b[4] = {0};
    CHECK(vt_dist_rendezvous("127.0.0.1", 0, 0, 2, b, 4, 0, 1) == VT_ERR_INVALID_ARGUMENT &&
              strstr(vt_last_error(), "MASTER_PORT=0"),
          "port 0: '%s'", vt_last_error());
    CHECK(vt_dist_rendezvous("127.0.0.1", 29500, 2, 2, b, 4, 0, 1) == VT_ERR_INVALID_ARGUMENT,
          "rank 2 of 2");
    CHECK(vt_dist_rendezvous("", 29500, 1, 2, b, 4, 0, 1) == VT_ERR_INVALID_ARGUMENT,
          "empty address");
    vt_status st = vt_dist_rendezvous("no-such-host.invalid", 29500, 1, 2, b, 4, 0, 1);
    CHECK(st == VT_ERR_IO && strstr(vt_last_error(), "no-such-host.invalid"),
          "unknown host: %d '%s'", st, vt_last_error());
}

/* The launcher's variables as vt_comm_launch reads them. */
static void case_launch_env(void)
{
    static const char *const clear[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE",
                                        "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"};
    for (size_t i = 0; i < sizeof clear / sizeof clear[0]; i++) unsetenv(clear[i]);
    vt_launch L;
    vt_comm_launch(&L);
    CHECK(L.size == 1 && L.rank == 0 && !L.via_mpi && !L.master_addr, "no launcher: %d %d",
          L.size, L.rank);
    setenv("WORLD_SIZE", "4", 1);
    setenv("RANK", "3", 1);
    setenv("LOCAL_RANK", "1", 1);
    setenv("LOCAL_WORLD_SIZE", "2", 1);
    setenv("MASTER_ADDR", "10.1.2.3", 1);
    setenv("MASTER_PORT", "29500", 1);
    vt_comm_launch(&L);
    CHECK(L.size == 4 && L.rank == 3 && L.local_rank == 1 && L.local_size == 2 && !L.via_mpi &&
              L.master_addr && !strcmp(L.master_addr, "10.1.2.3") && L.master_port == 29500,
          "torchrun: %d %d %d %d %d %d", L.size, L.rank, L.local_rank, L.local_size, L.via_mpi,
          L.master_port);
    setenv("MASTER_PORT", "70000", 1);
    vt_comm_launch(&L);
    CHECK(!L.master_addr && L.master_port == 0, "port 70000 taken");
    unsetenv("LOCAL_RANK");
    unsetenv("LOCAL_WORLD_SIZE");
    vt_comm_launch(&L);
    CHECK(L.local_rank == 3 && L.local_size == 4, "no LOCAL_RANK: %d of %d", L.local_rank,
          L.local_size);
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    setenv("OMPI_COMM_WORLD_RANK", "1", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "1", 1);
    vt_comm_launch(&L);
    CHECK(L.size == 2 && L.rank == 1 && L.local_rank == 0 && L.local_size == 1 && L.via_mpi,
          "mpirun first: %d %d %d %d", L.size, L.rank, L.local_rank, L.via_mpi);
    for (size_t i = 0; i < sizeof clear / sizeof clear[0]; i++) unsetenv(clear[i]);
    setenv("VT_DIST_TIMEOUT", "12.5", 1);
    CHECK(vt_comm_timeout() == 12.5, "VT_DIST_TIMEOUT=12.5");
    setenv("VT_DIST_TIMEOUT", "soon", 1);
    CHECK(vt_comm_timeout() == 600, "VT_DIST_TIMEOUT=soon");
    unsetenv("VT_DIST_TIMEOUT");
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    case_launch_env();
    case_bad_arguments();
    case_four_ranks();
    case_world_mismatch();
    case_duplicate();
    case_missing_rank();
    case_no_root();
    case_root_failed();
    case_root_failed_bad_rank();
    if (fails) {
        fprintf(stderr, "%d failed\n", fails);
        return 1;
    }
    printf("rendezvous: every case passed\n");
    return 0;
}
