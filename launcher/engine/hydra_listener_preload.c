/* Preloaded into mpiexec.hydra by gpulaunch (hydra_engine.h): closes the
 * doors of Hydra's control port, which MPICH 4.0's Hydra opens on 0.0.0.0
 * with no way to say otherwise and whose protocol has no authentication (a
 * connection that sends proxy id 0 receives the launch's arguments; one that
 * connects and closes fails the whole job).
 *
 * - bind(): a listening IPv4 socket bound to INADDR_ANY is bound to the
 *   job's advertised address (GPULAUNCH_HYDRA_LISTEN_ADDR) instead, and
 *   marked close-on-exec, so no proxy, shim or rank inherits it.
 * - accept()/accept4() on that socket: a peer that connects from this host
 *   (any of its addresses) is taken only when its socket belongs to this
 *   process's effective uid (the uid column of /proc/net/tcp or tcp6, which
 *   the kernel fills from the connecting socket's owner) and it has not hung
 *   up already. Any other local peer is closed; Hydra, which treats a failed
 *   accept() or a closed connection as fatal, gets instead a duplicate of one
 *   end of a socket pair whose other end stays silent: it waits on it for
 *   ever and nothing happens. A peer on another host cannot be told apart
 *   from a proxy (Hydra's protocol proves nothing): docs/security.md.
 *
 * - The environment: Hydra copies its own environment at start-up and sends
 *   it to every proxy over that port (-genvnone only tells the proxy not to
 *   apply it). So before Hydra's main() runs, the constructor keeps the
 *   whole environment aside and leaves Hydra only what Hydra itself reads
 *   (PATH, LD_LIBRARY_PATH, HOME, USER, LOGNAME, TMPDIR, the locale, and
 *   HYDRA_*, MPIEXEC_*, SLURM_*); every exec*() from the process (a forked
 *   proxy, the ssh agent, srun) gets the whole environment back, with what
 *   Hydra set since on top. The job's secret, the slot table and the user's
 *   own variables never reach the port.
 *
 * The constructor also removes this library from LD_PRELOAD and its own
 * setting, so nothing Hydra starts (proxies, ssh, srun, the ranks) sees
 * them: the user's own LD_PRELOAD, if any, is what they inherit. Acts only
 * in a process named mpiexec.hydra or mpiexec; elsewhere it does nothing. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <ifaddrs.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_LOCAL 256

static int active;
static struct in_addr listen_addr;
static int listen_fd = -1;
static struct in_addr local_addrs[MAX_LOCAL]; /* this host's IPv4 addresses */
static int local_count;
static int quiet_fd = -1;   /* one end of a socket pair whose other end never speaks */

static int (*real_bind)(int, const struct sockaddr *, socklen_t);
static int (*real_accept)(int, struct sockaddr *, socklen_t *);
static int (*real_accept4)(int, struct sockaddr *, socklen_t *, int);
static int (*real_execve)(const char *, char *const[], char *const[]);
static int (*real_execvpe)(const char *, char *const[], char *const[]);

extern char **environ;
static char **kept_env; /* the whole environment as it was, NULL-terminated */

/* What Hydra itself reads; everything else stays out of its copy. */
static int hydra_reads(const char *entry) {
  static const char *const names[] = {"PATH=", "LD_LIBRARY_PATH=", "HOME=", "USER=", "LOGNAME=", "TMPDIR=",
                                      "LANG=", "TERM=", NULL};
  static const char *const prefixes[] = {"LC_", "HYDRA_", "MPIEXEC_", "SLURM_", NULL};
  for (int i = 0; names[i]; ++i)
    if (strncmp(entry, names[i], strlen(names[i])) == 0) return 1;
  for (int i = 0; prefixes[i]; ++i)
    if (strncmp(entry, prefixes[i], strlen(prefixes[i])) == 0) return 1;
  return 0;
}

static void keep_environment_aside(void) {
  size_t n = 0;
  while (environ[n]) ++n;
  kept_env = calloc(n + 1, sizeof *kept_env);
  char **hydra_env = calloc(n + 1, sizeof *hydra_env);
  if (!kept_env || !hydra_env) return; /* out of memory at start-up: leave it as it is */
  size_t h = 0;
  for (size_t i = 0; i < n; ++i) {
    kept_env[i] = strdup(environ[i]);
    if (hydra_reads(environ[i])) hydra_env[h++] = strdup(environ[i]);
  }
  environ = hydra_env; /* never freed: Hydra's environment for its lifetime */
}

/* The kept environment with what the process set since (the current
 * environ) on top; `extra` (an explicit envp) on top of both. Allocated once
 * per exec, in a process about to become another program. */
static char **whole_environment(char *const extra[]) {
  size_t n = 0, m = 0, k = 0;
  while (kept_env && kept_env[n]) ++n;
  while (environ && environ[m]) ++m;
  while (extra && extra[k]) ++k;
  char **out = calloc(n + m + k + 1, sizeof *out);
  if (!out) return NULL;
  size_t used = 0;
  char *const *layers[3] = {kept_env, environ, extra};
  for (int layer = 0; layer < 3; ++layer) {
    for (size_t i = 0; layers[layer] && layers[layer][i]; ++i) {
      const char *entry = layers[layer][i];
      const char *eq = strchr(entry, '=');
      const size_t name_len = eq ? (size_t)(eq - entry) + 1 : strlen(entry);
      size_t j = 0;
      for (; j < used; ++j)
        if (strncmp(out[j], entry, name_len) == 0) break;
      out[j] = (char *)entry;
      if (j == used) ++used;
    }
  }
  return out;
}

/* Removes `entry` from the space- or colon-separated list in LD_PRELOAD. */
static void drop_from_preload(const char *entry) {
  const char *value = getenv("LD_PRELOAD");
  if (!value || !entry || !*entry) return;
  char *copy = strdup(value);
  char *out = calloc(strlen(value) + 1, 1);
  if (!copy || !out) { free(copy); free(out); return; }
  char *save = NULL;
  for (char *tok = strtok_r(copy, " :", &save); tok; tok = strtok_r(NULL, " :", &save)) {
    if (strcmp(tok, entry) == 0) continue;
    if (*out) strcat(out, " ");
    strcat(out, tok);
  }
  if (*out) setenv("LD_PRELOAD", out, 1); else unsetenv("LD_PRELOAD");
  free(copy);
  free(out);
}

static void read_local_addresses(void) {
  struct ifaddrs *list = NULL;
  if (getifaddrs(&list) != 0) return;
  for (struct ifaddrs *i = list; i && local_count < MAX_LOCAL; i = i->ifa_next) {
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET)
      local_addrs[local_count++] = ((const struct sockaddr_in *)i->ifa_addr)->sin_addr;
  }
  freeifaddrs(list);
}

__attribute__((constructor)) static void hydra_listener_init(void) {
  /* In any other program (env(1), a wrapper script's shell) the settings
   * pass on untouched to the mpiexec.hydra it starts. */
  const int is_hydra = strcmp(program_invocation_short_name, "mpiexec.hydra") == 0 ||
                       strcmp(program_invocation_short_name, "mpiexec") == 0;
  if (is_hydra) {
    Dl_info self;
    if (dladdr((void *)&hydra_listener_init, &self) && self.dli_fname) drop_from_preload(self.dli_fname);
    const char *addr = getenv("GPULAUNCH_HYDRA_LISTEN_ADDR");
    const int listen_ok = addr && inet_pton(AF_INET, addr, &listen_addr) == 1;
    unsetenv("GPULAUNCH_HYDRA_LISTEN_ADDR");
    if (listen_ok) {
      active = 1;
      read_local_addresses();
      keep_environment_aside();
    }
  }
  real_bind = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "bind");
  real_accept = (int (*)(int, struct sockaddr *, socklen_t *))dlsym(RTLD_NEXT, "accept");
  real_accept4 = (int (*)(int, struct sockaddr *, socklen_t *, int))dlsym(RTLD_NEXT, "accept4");
  real_execve = (int (*)(const char *, char *const[], char *const[]))dlsym(RTLD_NEXT, "execve");
  real_execvpe = (int (*)(const char *, char *const[], char *const[]))dlsym(RTLD_NEXT, "execvpe");
}

/* Every program mpiexec.hydra starts gets the whole environment back. */
int execve(const char *path, char *const argv[], char *const envp[]) {
  if (!active || !kept_env) return real_execve(path, argv, envp);
  char **env = whole_environment(envp == environ ? NULL : envp);
  return real_execve(path, argv, env ? env : envp);
}

int execvpe(const char *file, char *const argv[], char *const envp[]) {
  if (!active || !kept_env) return real_execvpe(file, argv, envp);
  char **env = whole_environment(envp == environ ? NULL : envp);
  return real_execvpe(file, argv, env ? env : envp);
}

int execv(const char *path, char *const argv[]) { return execve(path, argv, environ); }

int execvp(const char *file, char *const argv[]) { return execvpe(file, argv, environ); }

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
  if (active && addr && addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
    struct sockaddr_in in;
    memcpy(&in, addr, sizeof in);
    if (in.sin_addr.s_addr == htonl(INADDR_ANY)) {
      in.sin_addr = listen_addr;
      const int rc = real_bind(fd, (const struct sockaddr *)&in, sizeof in);
      if (rc == 0) {
        listen_fd = fd;
        fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC);
      }
      return rc;
    }
  }
  return real_bind(fd, addr, len);
}

static int is_local_address(struct in_addr a) {
  if ((ntohl(a.s_addr) >> 24) == 127) return 1;
  for (int i = 0; i < local_count; ++i)
    if (local_addrs[i].s_addr == a.s_addr) return 1;
  return 0;
}

/* The uid that owns the socket whose local end is `peer` and remote end `us`,
 * from one of /proc/net/tcp (an IPv4 socket) or tcp6 (an IPv6 one, the
 * address mapped: ::ffff:a.b.c.d); -1 when neither lists it. /proc prints
 * each 32-bit word of an address as the kernel holds it, ports in host order. */
static long owner_in(const char *table, const struct sockaddr_in *peer, const struct sockaddr_in *us) {
  const int v6 = strstr(table, "tcp6") != NULL;
  char want_local[64], want_remote[64];
  snprintf(want_local, sizeof want_local, "%s%08X:%04X", v6 ? "0000000000000000FFFF0000" : "",
           (unsigned)peer->sin_addr.s_addr, (unsigned)ntohs(peer->sin_port));
  snprintf(want_remote, sizeof want_remote, "%s%08X:%04X", v6 ? "0000000000000000FFFF0000" : "",
           (unsigned)us->sin_addr.s_addr, (unsigned)ntohs(us->sin_port));
  FILE *f = fopen(table, "re");
  if (!f) return -1;
  char line[512];
  long owner = -1;
  while (fgets(line, sizeof line, f)) {
    char local[64], remote[64];
    long uid;
    /* sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid */
    if (sscanf(line, " %*s %63s %63s %*s %*s %*s %*s %ld", local, remote, &uid) != 3) continue;
    if (strcmp(local, want_local) == 0 && strcmp(remote, want_remote) == 0) {
      owner = uid;
      break;
    }
  }
  fclose(f);
  return owner;
}

static int peer_may_connect(int fd) {
  struct sockaddr_in peer, us;
  socklen_t plen = sizeof peer, ulen = sizeof us;
  if (getpeername(fd, (struct sockaddr *)&peer, &plen) != 0 || peer.sin_family != AF_INET) return 0;
  if (getsockname(fd, (struct sockaddr *)&us, &ulen) != 0) return 0;
  if (!is_local_address(peer.sin_addr)) return 1; /* another host: nothing to check it by */
  long owner = owner_in("/proc/net/tcp", &peer, &us);
  if (owner < 0) owner = owner_in("/proc/net/tcp6", &peer, &us);
  if (owner != (long)geteuid()) return 0;
  /* A proxy speaks first and never hangs up before it has. */
  struct pollfd p = {fd, POLLRDHUP, 0};
  return !(poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)));
}

/* What Hydra gets for a refused peer: a descriptor that never has data. A
 * TCP connection over loopback (Hydra sets TCP_NODELAY on what it accepts,
 * and fails on anything else), made once; its far end stays open and silent
 * for the life of the process. */
static int silent_descriptor(void) {
  if (quiet_fd < 0) {
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    const int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int far = -1;
    if (l >= 0 && c >= 0 && real_bind(l, (struct sockaddr *)&a, sizeof a) == 0 && listen(l, 1) == 0 &&
        getsockname(l, (struct sockaddr *)&a, &len) == 0 && connect(c, (struct sockaddr *)&a, sizeof a) == 0) {
      far = real_accept4(l, NULL, NULL, SOCK_CLOEXEC);
    }
    if (l >= 0) close(l);
    if (far < 0) {
      if (c >= 0) close(c);
      return -1;
    }
    quiet_fd = c; /* `far` stays open, never written to */
  }
  return fcntl(quiet_fd, F_DUPFD_CLOEXEC, 0);
}

static int filtered_accept(int fd, struct sockaddr *addr, socklen_t *len, int flags, int with_flags) {
  for (;;) {
    const int conn = with_flags ? real_accept4(fd, addr, len, flags) : real_accept(fd, addr, len);
    if (conn < 0 || !active || fd != listen_fd || peer_may_connect(conn)) return conn;
    close(conn);
    /* Another connection waiting? Take it instead; else hand Hydra the silent one. */
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 0) == 1 && (p.revents & POLLIN)) continue;
    return silent_descriptor();
  }
}

int accept(int fd, struct sockaddr *addr, socklen_t *len) { return filtered_accept(fd, addr, len, 0, 0); }

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
  return filtered_accept(fd, addr, len, flags, 1);
}
