/* The rendezvous of a torchrun-style launch (comm.h, vt_dist_rendezvous): rank 0 hands a few
 * bytes (NCCL's unique id) to every other rank over TCP at MASTER_ADDR:MASTER_PORT.  Only this
 * bootstrap goes over the socket; the collectives are the engine's (NCCL).
 *
 * Protocol, one connection per rank r > 0, every integer little-endian uint32:
 *   r -> 0: "VTRDV001", rank, world size, blob bytes
 *   0 -> r: "VTRDV001", verdict (0: welcome, else why not: V_*), blob bytes, the blob
 * Rank 0 drops a connection that does not start with the magic (a port scanner, a stray
 * client) and goes on waiting; a rank that announces another world size, a rank out of range
 * or one already seen is answered with the verdict and ends the rendezvous with an error on
 * both sides. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dist/comm.h"

static const char MAGIC[8] = {'V', 'T', 'R', 'D', 'V', '0', '0', '1'};

enum { V_OK = 0, V_WORLD = 1, V_RANK = 2, V_DUP = 3, V_BYTES = 4, V_ROOT = 5 };

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Wait until fd is ready for `events` or the deadline passes: 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short events, double deadline)
{
    for (;;) {
        double left = deadline - vt_now();
        if (left <= 0) return 0;
        struct pollfd p = {fd, events, 0};
        int ms = left > 1e6 ? 1000000000 : (int)(left * 1000) + 1;
        int r = poll(&p, 1, ms);
        if (r > 0) return 1;
        if (r == 0) continue; /* recheck the deadline */
        if (errno != EINTR) return -1;
    }
}

/* All of buf[n] in or out before the deadline: 0, or -1 (timeout, error, closed). */
static int io_all(int fd, void *buf, size_t n, int out, double deadline)
{
    unsigned char *p = buf;
    while (n) {
        int w = wait_fd(fd, out ? POLLOUT : POLLIN, deadline);
        if (w <= 0) return -1;
        ssize_t k = out ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
        if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static const char *verdict_text(uint32_t v)
{
    switch (v) {
    case V_WORLD: return "another WORLD_SIZE";
    case V_RANK: return "a RANK outside 0..WORLD_SIZE-1";
    case V_DUP: return "a RANK another process already has";
    case V_BYTES: return "another build of libvisiontrain (rendezvous size)";
    case V_ROOT: return "rank 0 failed before the rendezvous (its log says why)";
    default: return "an unknown answer";
    }
}

static int tcp_nodelay(int fd)
{
    int one = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Rank 0: listen, welcome size - 1 ranks, each one's blob sent as soon as it has said hello. */
static vt_status serve(const char *addr, int port, int size, const void *blob, size_t bytes,
                       uint32_t root_verdict, double deadline, double timeout_s)
{
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    /* a loopback MASTER_ADDR keeps the port on loopback; any other address listens on every
     * interface, as the other hosts must reach it (torchrun's master does the same) */
    int loop = !strcmp(addr, "localhost") || !strncmp(addr, "127.", 4) || !strcmp(addr, "::1");
    int rc = getaddrinfo(loop ? addr : NULL, ps, &hints, &ai);
    if (rc)
        return vt_fail(VT_ERR_IO, "distributed rendezvous: MASTER_ADDR=%s MASTER_PORT=%d: %s",
                       addr, port, gai_strerror(rc));
    int lfd = -1, err = 0;
    for (struct addrinfo *a = ai; a && lfd < 0; a = a->ai_next) {
        lfd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (lfd < 0) {
            err = errno;
            continue;
        }
        int one = 1;
        setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(lfd, a->ai_addr, a->ai_addrlen) != 0 || listen(lfd, size) != 0) {
            err = errno;
            close(lfd);
            lfd = -1;
        }
    }
    freeaddrinfo(ai);
    if (lfd < 0)
        return vt_fail(VT_ERR_IO, "distributed rendezvous: rank 0 cannot listen on port %d "
                       "(MASTER_PORT): %s", port, strerror(err));
    unsigned char *seen = vt_calloc((size_t)size, 1);
    if (!seen) {
        close(lfd);
        return VT_ERR_OUT_OF_MEMORY;
    }
    vt_status st = VT_OK;
    int joined = 1;
    while (joined < size) {
        int w = wait_fd(lfd, POLLIN, deadline);
        if (w <= 0) {
            char missing[256] = "";
            size_t off = 0;
            for (int r = 1; r < size && off + 16 < sizeof missing; r++)
                if (!seen[r]) off += (size_t)snprintf(missing + off, sizeof missing - off,
                                                       "%s%d", off ? "," : "", r);
            st = vt_fail(VT_ERR_IO, "distributed rendezvous: rank 0 waited %g s on port %d "
                         "for %d of %d ranks; rank%s %s never connected (started? same "
                         "MASTER_ADDR/MASTER_PORT?)", timeout_s, port, size - joined, size,
                         size - joined > 1 ? "s" : "", missing);
            break;
        }
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) continue;
        tcp_nodelay(fd);
        unsigned char hello[20], reply[16];
        /* a client that says nothing sensible within a few seconds is not one of ours */
        double hd = vt_now() + 5;
        if (hd > deadline) hd = deadline;
        if (io_all(fd, hello, sizeof hello, 0, hd) || memcmp(hello, MAGIC, 8)) {
            close(fd);
            continue;
        }
        uint32_t r = get32(hello + 8), s = get32(hello + 12), b = get32(hello + 16);
        uint32_t v = s != (uint32_t)size                 ? V_WORLD
                     : r == 0 || r >= (uint32_t)size ? V_RANK
                     : seen[r]                       ? V_DUP
                     : b != bytes                    ? V_BYTES
                                                     : V_OK;
        if (v == V_OK && root_verdict) v = root_verdict; /* a valid rank, told rank 0 failed */
        memcpy(reply, MAGIC, 8);
        put32(reply + 8, v);
        put32(reply + 12, (uint32_t)bytes);
        int sent = io_all(fd, reply, sizeof reply, 1, deadline) == 0 &&
                   (v != V_OK || io_all(fd, (void *)blob, bytes, 1, deadline) == 0);
        close(fd);
        if (v == V_WORLD) {
            st = vt_fail(VT_ERR_IO, "distributed rendezvous: rank %u says WORLD_SIZE=%u, rank 0 "
                         "has %d: launch every rank with the same WORLD_SIZE", r, s, size);
            break;
        }
        if (v == V_RANK || v == V_DUP) {
            st = vt_fail(VT_ERR_IO, "distributed rendezvous: a process announced RANK=%u of "
                         "WORLD_SIZE=%d (%s): each rank 1..%d once", r, size,
                         verdict_text(v), size - 1);
            break;
        }
        if (v == V_BYTES) {
            st = vt_fail(VT_ERR_IO, "distributed rendezvous: rank %u is %s", r,
                         verdict_text(v));
            break;
        }
        if (v == V_OK ? sent : v == V_ROOT) { /* welcomed, or told that rank 0 failed */
            seen[r] = 1;
            joined++;
        }
    }
    free(seen);
    close(lfd);
    return st;
}

/* Rank r > 0: connect (retrying while rank 0 is not listening yet), say hello, read the blob. */
static vt_status join(const char *addr, int port, int rank, int size, void *blob, size_t bytes,
                      double deadline, double timeout_s)
{
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int last_err = 0;
    for (;;) {
        int rc = getaddrinfo(addr, ps, &hints, &ai);
        if (rc)
            return vt_fail(VT_ERR_IO, "distributed rendezvous: rank %d: MASTER_ADDR=%s: %s",
                           rank, addr, gai_strerror(rc));
        int fd = -1;
        for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
            fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
            if (fd < 0) {
                last_err = errno;
                continue;
            }
            if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
                last_err = errno;
                close(fd);
                fd = -1;
            }
        }
        freeaddrinfo(ai);
        ai = NULL;
        if (fd >= 0) {
            tcp_nodelay(fd);
            unsigned char hello[20], reply[16];
            memcpy(hello, MAGIC, 8);
            put32(hello + 8, (uint32_t)rank);
            put32(hello + 12, (uint32_t)size);
            put32(hello + 16, (uint32_t)bytes);
            if (io_all(fd, hello, sizeof hello, 1, deadline) ||
                io_all(fd, reply, sizeof reply, 0, deadline) || memcmp(reply, MAGIC, 8)) {
                close(fd);
                return vt_fail(VT_ERR_IO, "distributed rendezvous: rank %d reached %s:%d but "
                               "got no answer from rank 0 within %g s (is another program "
                               "on MASTER_PORT?)", rank, addr, port, timeout_s);
            }
            uint32_t v = get32(reply + 8);
            if (v != V_OK) {
                close(fd);
                return vt_fail(VT_ERR_IO, "distributed rendezvous: rank 0 at %s:%d refused rank "
                               "%d of %d: %s", addr, port, rank, size, verdict_text(v));
            }
            int bad = get32(reply + 12) != bytes || io_all(fd, blob, bytes, 0, deadline);
            close(fd);
            if (bad)
                return vt_fail(VT_ERR_IO, "distributed rendezvous: rank %d: rank 0 at %s:%d "
                               "closed the connection", rank, addr, port);
            return VT_OK;
        }
        if (vt_now() + 0.1 >= deadline) break;
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return vt_fail(VT_ERR_IO, "distributed rendezvous: rank %d of %d could not reach rank 0 at "
                   "MASTER_ADDR=%s MASTER_PORT=%d within %g s: %s", rank, size, addr, port,
                   timeout_s, last_err ? strerror(last_err) : "no address");
}

vt_status vt_dist_rendezvous(const char *addr, int port, int rank, int size, void *blob,
                             size_t bytes, int root_failed, double timeout_s)
{
    if (!addr || !*addr || port <= 0 || port > 65535 || size < 2 || rank < 0 || rank >= size ||
        !blob || bytes == 0 || bytes > 65536 || !(timeout_s > 0))
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "distributed rendezvous: MASTER_ADDR=%s "
                       "MASTER_PORT=%d RANK=%d WORLD_SIZE=%d: need an address, a port "
                       "1..65535 and 0 <= RANK < WORLD_SIZE", addr ? addr : "(none)", port,
                       rank, size);
    double deadline = vt_now() + timeout_s;
    if (rank == 0)
        return serve(addr, port, size, blob, bytes, root_failed ? V_ROOT : V_OK, deadline,
                     timeout_s);
    return join(addr, port, rank, size, blob, bytes, deadline, timeout_s);
}
