/* vt: what the commands share: exit codes and failure messages, time and duration formatting,
 * files and image folders, the SIGINT handling of a training run, the key=value arguments
 * with their value parsers, and the launcher of one process per GPU. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vt_cli.h"

/* ---- small helpers ------------------------------------------------------------------------ */

static vt_trainer *volatile g_trainer; /* for the SIGINT handler only */
static volatile sig_atomic_t g_interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    g_interrupted = 1;
    if (g_trainer) vt_trainer_cancel(g_trainer);
}

/* Ctrl-C cancels the run between batches; a second Ctrl-C kills the process (SA_RESETHAND). */
void catch_sigint(vt_trainer *t)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    g_trainer = t;
    g_interrupted = 0;
    sigaction(SIGINT, &sa, NULL);
}

void release_sigint(void)
{
    signal(SIGINT, SIG_DFL);
    g_trainer = NULL;
}

static int exit_code(vt_status st)
{
    switch (st) {
    case VT_OK: return 0;
    case VT_ERR_UNKNOWN_OPTION:
    case VT_ERR_OPTION_VALUE:
    case VT_ERR_INVALID_ARGUMENT: return EXIT_USAGE;
    case VT_ERR_NOT_FOUND:
    case VT_ERR_IO:
    case VT_ERR_FORMAT:
    case VT_ERR_DATASET:
    case VT_ERR_CHECKPOINT: return EXIT_DATA;
    case VT_ERR_CANCELLED: return EXIT_INTERRUPTED;
    default: return EXIT_FAILURE_;
    }
}

/* Print "vt CMD: message (status)" and return the exit code of the status.  msg NULL or "":
 * the thread's last error. */
int fail(const char *cmd, vt_status st, const char *msg)
{
    if (!msg || !*msg) msg = vt_last_error();
    fprintf(stderr, "vt %s: %s (%s)\n", cmd, msg && *msg ? msg : "failed", vt_status_string(st));
    return exit_code(st);
}

int make_trainer(const char *cmd, vt_model *m, vt_dataset *ds, const args *a, const char *also,
                 vt_trainer **out)
{
    vt_status st = vt_trainer_create(out, m, ds);
    if (st) return fail(cmd, st, NULL);
    for (int i = 0; i < a->n; i++) {
        if (a->kv[i].tool) continue;
        if ((st = vt_trainer_set(*out, a->kv[i].arg))) {
            int rc = fail(cmd, st, vt_trainer_last_error(*out));
            if (st == VT_ERR_UNKNOWN_OPTION) fprintf(stderr, "vt %s also takes: %s\n", cmd, also);
            return rc;
        }
    }
    return 0;
}

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* "h:mm:ss" below a day, else "Nd hh:mm". */
const char *fmt_duration(double s, char *buf, size_t cap)
{
    if (!(s >= 0) || s > 1e12) {
        snprintf(buf, cap, "?");
        return buf;
    }
    long t = (long)(s + 0.5);
    if (t >= 86400) snprintf(buf, cap, "%ldd %02ld:%02ld", t / 86400, t / 3600 % 24, t / 60 % 60);
    else snprintf(buf, cap, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    return buf;
}

/* "h:mm" (minutes rounded up, so a short run never reads 0:00). */
const char *fmt_hmm(double s, char *buf, size_t cap)
{
    if (!(s >= 0) || s > 1e12) {
        snprintf(buf, cap, "?");
        return buf;
    }
    long m = (long)ceil(s / 60.0);
    snprintf(buf, cap, "%ld:%02ld", m / 60, m % 60);
    return buf;
}

int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* A model argument names a file when it exists, has a path separator or ends in .vtm. */
int names_file(const char *model)
{
    size_t n = strlen(model);
    return strchr(model, '/') || (n > 4 && !strcmp(model + n - 4, ".vtm")) || is_file(model);
}

static int has_image_ext(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot) return 0;
    return !strcasecmp(dot, ".png") || !strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg");
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The image files directly in dir, sorted; NULL on error.  *n gets the count. */
char **list_images(const char *dir, int *n)
{
    DIR *d = opendir(dir);
    *n = 0;
    if (!d) return NULL;
    char **v = NULL;
    int cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || !has_image_ext(e->d_name)) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            char **nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv) break;
            v = nv;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        if (!(v[*n] = malloc(len))) break;
        snprintf(v[*n], len, "%s/%s", dir, e->d_name);
        (*n)++;
    }
    closedir(d);
    if (*n) qsort(v, (size_t)*n, sizeof *v, cmp_str);
    return v ? v : calloc(1, sizeof *v);
}

/* ---- display width (UTF-8 class names in tables) ---------------------------------------- */

/* Next code point of a UTF-8 string (a bad byte counts as one character); *len its bytes. */
static unsigned utf8_next(const unsigned char *s, int *len)
{
    unsigned c = s[0];
    int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) n = 1; /* truncated sequence: one byte */
    *len = n;
    if (n == 1) return c;
    unsigned v = c & (0x7F >> n);
    for (int i = 1; i < n; i++) v = v << 6 | (s[i] & 0x3F);
    return v;
}

/* Terminal columns of a code point: 0 for combining marks, 2 for East Asian wide and
 * full-width characters and emoji, else 1 (the common ranges; wcwidth() needs a locale). */
static int cp_width(unsigned c)
{
    if ((c >= 0x300 && c <= 0x36F) || (c >= 0x1AB0 && c <= 0x1AFF) ||
        (c >= 0x1DC0 && c <= 0x1DFF) || (c >= 0x20D0 && c <= 0x20FF) ||
        (c >= 0xFE20 && c <= 0xFE2F) || c == 0x200B || c == 0x200D || (c >= 0xFE00 && c <= 0xFE0F))
        return 0;
    if ((c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0x303E) ||
        (c >= 0x3041 && c <= 0x33FF) || (c >= 0x3400 && c <= 0x4DBF) ||
        (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xA000 && c <= 0xA4CF) ||
        (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF) ||
        (c >= 0xFE30 && c <= 0xFE4F) || (c >= 0xFF00 && c <= 0xFF60) ||
        (c >= 0xFFE0 && c <= 0xFFE6) || (c >= 0x1F300 && c <= 0x1F64F) ||
        (c >= 0x1F900 && c <= 0x1F9FF) || (c >= 0x20000 && c <= 0x3FFFD))
        return 2;
    return 1;
}

int display_width(const char *s)
{
    int w = 0, n;
    for (const unsigned char *p = (const unsigned char *)s; *p; p += n) w += cp_width(utf8_next(p, &n));
    return w;
}

void print_cell(const char *s, int width)
{
    int w = 0, n;
    const unsigned char *p = (const unsigned char *)s;
    for (; *p; p += n) {
        int cw = cp_width(utf8_next(p, &n));
        if (w + cw > width) break; /* cut at a character, never inside one */
        fwrite(p, 1, (size_t)n, stdout);
        w += cw;
    }
    for (; w < width; w++) putchar(' ');
}

/* ---- arguments ------------------------------------------------------------------------------ */

int key_is(const kv *k, const char *key)
{
    return k->klen == strlen(key) && strncmp(k->arg, key, k->klen) == 0;
}

/* The last value given for key, or NULL; marks every occurrence as the tool's. */
const char *take(args *a, const char *key)
{
    const char *v = NULL;
    for (int i = 0; i < a->n; i++)
        if (key_is(&a->kv[i], key)) {
            a->kv[i].tool = 1;
            v = a->kv[i].val;
        }
    return v;
}

int parse_args(const char *cmd, int argc, char **argv, args *a)
{
    memset(a, 0, sizeof *a);
    a->cmd = cmd;
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i], *eq = strchr(s, '=');
        if (!strcmp(s, "--help") || !strcmp(s, "-h") || !strcmp(s, "help")) {
            a->help = 1;
            continue;
        }
        if (!eq || eq == s) {
            /* vt predict: more images; vt import: the ONNX file */
            int positional = !strcmp(cmd, "predict") || !strcmp(cmd, "import");
            if (positional && a->nsources < MAX_SOURCES) {
                a->sources[a->nsources++] = s;
                continue;
            }
            fprintf(stderr, "vt %s: '%s' is not of the form key=value (see 'vt help %s')\n", cmd,
                    s, cmd);
            return -1;
        }
        if (a->n == MAX_KV) {
            fprintf(stderr, "vt %s: too many arguments\n", cmd);
            return -1;
        }
        kv *k = &a->kv[a->n++];
        k->arg = s;
        k->val = eq + 1;
        k->klen = (size_t)(eq - s);
        if (key_is(k, "source")) {
            if (a->nsources < MAX_SOURCES) a->sources[a->nsources++] = k->val;
        }
    }
    return 0;
}

/* Take every key of the library's option group `scope` (vt_option_scopes) given on the command
 * line into opts as " key=value", and append the group's key names to valid (", "-separated):
 * the call's keys, ranges and defaults come from the library's table, not from a list here. */
void take_scope(args *a, int scope, char *opts, size_t cap, char *valid, size_t vcap)
{
    for (int id = vt_option_next(0); id; id = vt_option_next(id)) {
        const char *key;
        if (!(vt_option_scopes((vt_option)id) & scope) ||
            vt_option_info((vt_option)id, &key, NULL, NULL, NULL, NULL))
            continue;
        size_t used = strlen(valid);
        if (used < vcap) snprintf(valid + used, vcap - used, "%s%s", used ? ", " : "", key);
        const char *v = take(a, key);
        used = strlen(opts);
        if (v && used < cap) snprintf(opts + used, cap - used, "%s%s=%s", used ? " " : "", key, v);
    }
}

/* Reject every argument not marked as the tool's: "unknown key 'x'; valid keys: ...". */
int reject_unknown(const args *a, const char *valid)
{
    for (int i = 0; i < a->n; i++)
        if (!a->kv[i].tool) {
            fprintf(stderr, "vt %s: unknown key '%.*s'; valid keys: %s\n", a->cmd,
                    (int)a->kv[i].klen, a->kv[i].arg, valid);
            return EXIT_USAGE;
        }
    return 0;
}

/* Parse a 0|1 flag. */
int flag_value(const char *cmd, const char *key, const char *v, int *out)
{
    if (!v) return 0;
    if (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes")) *out = 1;
    else if (!strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "no")) *out = 0;
    else {
        fprintf(stderr, "vt %s: %s=%s: expected 0 or 1\n", cmd, key, v);
        return EXIT_USAGE;
    }
    return 0;
}

int int_value(const char *cmd, const char *key, const char *v, long lo, long hi, long *out)
{
    if (!v) return 0;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (!*v || *end || errno || x < lo || x > hi) {
        fprintf(stderr, "vt %s: %s=%s: expected an integer in %ld..%ld\n", cmd, key, v, lo, hi);
        return EXIT_USAGE;
    }
    *out = x;
    return 0;
}

int num_value(const char *cmd, const char *key, const char *v, double lo, double *out)
{
    if (!v) return 0;
    char *end;
    double x = strtod(v, &end);
    if (!*v || *end || !isfinite(x) || x < lo) {
        fprintf(stderr, "vt %s: %s=%s: expected a number >= %g\n", cmd, key, v, lo);
        return EXIT_USAGE;
    }
    *out = x;
    return 0;
}

/* ---- tasks, as the library describes them ---------------------------------------------- */

const char *task_names(const char *sep, char *buf, size_t cap)
{
    size_t k = 0;
    if (cap) buf[0] = 0;
    for (vt_task t = vt_task_next((vt_task)0); t && k < cap; t = vt_task_next(t))
        k += (size_t)snprintf(buf + k, cap - k, "%s%s", k ? sep : "", vt_task_name(t));
    return buf;
}

int parse_task(const char *cmd, const char *v, vt_task *task)
{
    if (!v) return 0;
    /* the name only (the run folder's: task=detect), not the title vt_task_parse takes too */
    vt_task t = vt_task_parse(v);
    if (!t || strcmp(vt_task_name(t), v)) {
        char names[256];
        fprintf(stderr, "vt %s: task=%s: valid tasks: %s\n", cmd, v,
                task_names(", ", names, sizeof names));
        return EXIT_USAGE;
    }
    *task = t;
    return 0;
}

/* default: the task the data's layout suggests (vt_dataset_guess_task: detection for a
 * .yaml/.yml/.json or a folder holding a data.yaml, else classification) */
int task_value(const char *cmd, const char *v, const char *data, vt_task *task)
{
    if (!v) {
        *task = vt_dataset_guess_task(data ? data : ".");
        return 0;
    }
    return parse_task(cmd, v, task);
}

/* A model's task, unless it labels images (a classifier name says little of the data: the
 * layout's guess stands). */
vt_task model_task_or(const char *arch, vt_task guess)
{
    vt_task t = arch ? vt_arch_task(arch) : (vt_task)0;
    return t && !labels_per_image(t) ? t : guess;
}

int labels_per_image(vt_task task)
{
    return (vt_task_label_kinds(task) & VT_LABELS_IMAGE_CLASS) != 0;
}

const char *metric_words(vt_metric m)
{
    /* table labels that are identifiers rather than words */
    if (m == VT_METRIC_PIXEL_ACC) return "pixel accuracy";
    const char *label = vt_metric_label(m);
    return label ? label : "?";
}

/* ---- one process per GPU (vt train device=0,1,...) ---------------------------------------- */

/* A process that an MPI launcher, torchrun or launch_ranks started is one rank already: it
 * trains on its own entry of the list (the library picks entry LOCAL_RANK) and starts none. */
int launches_ranks(const char *devices)
{
    static const char *const world[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                        "PMIX_SIZE"};
    if (!devices || !strchr(devices, ',')) return 0;
    for (size_t i = 0; i < sizeof world / sizeof *world; i++)
        if (getenv(world[i])) return 0;
    return 1;
}

/* The number of GPUs in a device list, or -1 after a usage message: each entry a GPU index
 * (the library's range, 0..63), each GPU once, since two ranks on one GPU would only fight
 * over its memory. */
static int count_gpus(const char *cmd, const char *devices)
{
    unsigned char seen[64] = {0};
    int n = 0;
    for (const char *p = devices;; p++) {
        size_t len = strcspn(p, ",");
        long gpu = len && len < 4 && strspn(p, "0123456789") >= len ? strtol(p, NULL, 10) : -1;
        if (gpu < 0 || gpu > 63) {
            fprintf(stderr, "vt %s: device=%s: '%.*s' is not a GPU index 0..63; a list names "
                    "GPUs, one rank on each (for several CPU ranks: mpirun -np N vt %s ... "
                    "device=cpu)\n", cmd, devices, (int)len, p, cmd);
            return -1;
        }
        if (seen[gpu]++) {
            fprintf(stderr, "vt %s: device=%s: GPU %ld is listed twice; give each GPU once "
                    "(one rank per GPU)\n", cmd, devices, gpu);
            return -1;
        }
        n++;
        p += len;
        if (!*p) return n;
    }
}

/* A TCP port free on 127.0.0.1 now, for the ranks' rendezvous; 0 if none.  Another program
 * may take it before rank 0 listens on it: rare, and rank 0 then fails and says so. */
static int free_port(void)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
    if (fd >= 0 && !bind(fd, (struct sockaddr *)&sa, sizeof sa) &&
        !getsockname(fd, (struct sockaddr *)&sa, &len))
        port = ntohs(sa.sin_port);
    if (fd >= 0) close(fd);
    return port;
}

/* The child side of fork: only async-signal-safe calls until exec (the parent may have
 * threads).  The ranks get a process group of their own, so that a Ctrl-C at the terminal
 * reaches them once, forwarded by the launcher (twice would kill them: vt's second Ctrl-C
 * does), and they die with the launcher even when it is killed outright (PDEATHSIG). */
static void exec_rank(const char *exe, char **argv, pid_t group, pid_t launcher,
                      const sigset_t *mask, const char *fail_msg)
{
    setpgid(0, group);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != launcher) _exit(EXIT_FAILURE_); /* it died before prctl */
    sigprocmask(SIG_SETMASK, mask, NULL);
    execv(exe, argv);
    ssize_t w = write(STDERR_FILENO, fail_msg, strlen(fail_msg));
    (void)w;
    _exit(127);
}

static void set_env_int(const char *name, int v)
{
    char s[16];
    snprintf(s, sizeof s, "%d", v);
    setenv(name, s, 1);
}

/* The ranks' variables are set in this process's environment too (it only waits after).
 * VT_TEST_SPAWN_EXEC=PATH, for tests only (examples/tests/test_vt_spawn.sh), runs PATH as the
 * ranks instead of this program, so that a rank can fail on cue on a machine without GPUs. */
int launch_ranks(const char *cmd, char **argv, const char *devices)
{
    int n = count_gpus(cmd, devices), port = n > 0 ? free_port() : 0;
    if (n < 0) return EXIT_USAGE;
    if (!port) {
        fprintf(stderr, "vt %s: no free TCP port on 127.0.0.1 for the ranks' rendezvous: %s\n",
                cmd, strerror(errno));
        return EXIT_FAILURE_;
    }
    const char *exe = getenv("VT_TEST_SPAWN_EXEC");
    if (!exe || !*exe) exe = "/proc/self/exe";
    fprintf(stderr, "vt %s: %d ranks, one per GPU (device=%s), rendezvous 127.0.0.1:%d\n", cmd,
            n, devices, port);
    fflush(NULL);

    /* SIGINT, SIGTERM and SIGCHLD are taken by sigtimedwait below, never by a handler: no
     * signal can slip in between a check and the wait.  An inherited SIG_IGN of SIGCHLD would
     * reap the ranks before waitpid sees their status. */
    sigset_t sigs, old;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    sigaddset(&sigs, SIGCHLD);
    signal(SIGCHLD, SIG_DFL);
    sigprocmask(SIG_BLOCK, &sigs, &old);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    set_env_int("MASTER_PORT", port);
    set_env_int("WORLD_SIZE", n);
    set_env_int("LOCAL_WORLD_SIZE", n);
    pid_t pids[64], group = 0, launcher = getpid();
    int started = 0, rc = 0;
    for (; started < n; started++) {
        char fail_msg[4200];
        snprintf(fail_msg, sizeof fail_msg, "vt %s: rank %d: cannot run %s\n", cmd, started, exe);
        set_env_int("RANK", started);
        set_env_int("LOCAL_RANK", started);
        pid_t pid = fork();
        if (pid == 0) exec_rank(exe, argv, group, launcher, &old, fail_msg);
        if (pid < 0) {
            fprintf(stderr, "vt %s: cannot start rank %d: %s\n", cmd, started, strerror(errno));
            rc = EXIT_FAILURE_;
            break;
        }
        if (!group) group = pid; /* rank 0 leads the ranks' group */
        setpgid(pid, group);     /* here too: a signal to the group may come before the child's */
        pids[started] = pid;
    }

    /* A failed rank leaves the others waiting for it in their next all-reduce: stop them.
     * After a forwarded signal they stop on their own (Ctrl-C: after the current batch, with
     * last.vtm saved), so a rank exiting then is no reason to stop the others. */
    int running = started, forwarded = 0;
    double kill_at = 0; /* when the ranks still running get SIGKILL (0: not yet due) */
    if (rc && group) {
        kill(-group, SIGTERM);
        kill_at = now_s() + 30;
    }
    while (running > 0) {
        int status, rank = -1;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        for (int i = 0; pid > 0 && i < started; i++)
            if (pids[i] == pid) rank = i;
        if (rank >= 0) {
            running--;
            int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
            int code = sig ? 128 + sig : WEXITSTATUS(status);
            if (code && !rc && !forwarded) {
                char why[48];
                if (sig) snprintf(why, sizeof why, "killed by signal %d", sig);
                else snprintf(why, sizeof why, "exit code %d", code);
                fprintf(stderr, "vt %s: rank %d failed (%s)%s\n", cmd, rank, why,
                        running ? "; stopped the other ranks" : "");
                if (running) {
                    kill(-group, SIGTERM);
                    kill_at = now_s() + 30;
                }
            }
            /* after a forwarded signal the others stop by themselves, within the deadline */
            if (code && forwarded && running && !kill_at) kill_at = now_s() + 30;
            if (code && !rc) rc = code;
            continue;
        }
        if (pid < 0 && errno == ECHILD) break; /* none left (never expected) */
        if (kill_at && now_s() >= kill_at) {
            fprintf(stderr, "vt %s: %d rank%s still running 30 s after SIGTERM: killed\n", cmd,
                    running, running == 1 ? "" : "s");
            kill(-group, SIGKILL);
            kill_at = 0;
        }
        struct timespec tick = {1, 0};
        int sig = sigtimedwait(&sigs, NULL, &tick);
        if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) { /* HUP: the terminal is gone */
            kill(-group, sig == SIGINT ? SIGINT : SIGTERM);
            forwarded = 1;
            if (sig != SIGINT && !kill_at) kill_at = now_s() + 30;
        }
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    return rc;
}
