/* ptxas.c - NVIDIA's assembler, run as a process, turns PTX into a cubin
 * (where it is found; else nvJitLink in-process, jitlink.c; assemble.c
 * chooses).
 *
 * ptxas reads and writes files, so the PTX goes to a private temporary
 * folder; ptxas runs as a child process (posix_spawn, no shell) with its
 * output captured to a file there, and everything is removed afterwards. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/ptx/ptx.h"

enum { PTXAS_PATH_MAX = 4096, PTXAS_MSG_MAX = 4000 };

static bool executable(const char *path) { return access(path, X_OK) == 0; }

bool ptx_find_ptxas(char *buf, size_t bufsize) {
    const char *forced = getenv("TILEC_PTXAS"); /* exactly this one, or none */
    if (forced) {
        snprintf(buf, bufsize, "%s", forced);
        return *forced && executable(buf);
    }
    const char *home = getenv("CUDA_HOME");
    if (home && *home) {
        snprintf(buf, bufsize, "%s/bin/ptxas", home);
        if (executable(buf)) return true;
    }
    const char *path = getenv("PATH");
    while (path && *path) {
        size_t n = strcspn(path, ":");
        if (n && n + 7 < bufsize) {
            snprintf(buf, bufsize, "%.*s/ptxas", (int)n, path);
            if (executable(buf)) return true;
        }
        path += n;
        if (*path == ':') path++;
    }
    snprintf(buf, bufsize, "/usr/local/cuda/bin/ptxas");
    return executable(buf);
}

static bool write_all(const char *path, const char *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(data, 1, len, f) == len;
    return (fclose(f) == 0) && ok;
}

bool ptx_ptxas_assemble(const char *ptx, size_t len, const ptx_asm_options *o, char **cubin, size_t *cubin_size,
                        tc_strbuf *info, tc_diag *diag) {
    *cubin = NULL;
    *cubin_size = 0;
    char tool[PTXAS_PATH_MAX];
    if (!ptx_find_ptxas(tool, sizeof tool)) {
        tc_error_plain(diag, "ptxas not found: set CUDA_HOME or put ptxas on PATH (or use --emit=ptx)");
        return false;
    }
    const char *tmp = getenv("TMPDIR");
    char dir[PTXAS_PATH_MAX], in[PTXAS_PATH_MAX + 16], out[PTXAS_PATH_MAX + 16], log[PTXAS_PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/tilec-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        tc_error_plain(diag, "cannot create a temporary folder for ptxas: %s", strerror(errno));
        return false;
    }
    snprintf(in, sizeof in, "%s/in.ptx", dir);
    snprintf(out, sizeof out, "%s/out.cubin", dir);
    snprintf(log, sizeof log, "%s/ptxas.log", dir);
    bool ok = false;
    if (!write_all(in, ptx, len)) {
        tc_error_plain(diag, "cannot write %s: %s", in, strerror(errno));
        goto cleanup;
    }
    char archflag[64], optflag[8];
    snprintf(archflag, sizeof archflag, "-arch=%s", o->arch);
    snprintf(optflag, sizeof optflag, "-O%d", o->opt_level ? 3 : 0);
    char splitflag[32];
    snprintf(splitflag, sizeof splitflag, "%d", o->threads);
    char *argv[10];
    int argc = 0;
    argv[argc++] = tool;
    argv[argc++] = archflag;
    argv[argc++] = optflag;
    if (o->verbose) argv[argc++] = "-v";
    if (o->threads !=
        1) { /* its functions on several threads: the same code (the cubin's tool note records the flag) */
        argv[argc++] = "--split-compile";
        argv[argc++] = splitflag;
    }
    argv[argc++] = in;
    argv[argc++] = "-o";
    argv[argc++] = out;
    argv[argc] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    extern char **environ;
    int rc = posix_spawn(&pid, tool, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc) {
        tc_error_plain(diag, "cannot run %s: %s", tool, strerror(rc));
        goto cleanup;
    }
    int status = -1; /* stays "failed" if the child cannot be waited for */
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            status = -1;
            break;
        }
    char *msg = NULL, *bin = NULL;
    size_t msglen = 0, binlen = 0;
    const char *err;
    tc_read_file(log, &msg, &msglen, &err);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (msglen > PTXAS_MSG_MAX) msglen = PTXAS_MSG_MAX;
        while (msglen && (msg[msglen - 1] == '\n' || msg[msglen - 1] == ' ')) msglen--; /* the diag ends the line */
        tc_error_plain(diag, "ptxas failed (%s): %.*s", tool, (int)msglen, msg ? msg : "");
    } else if (!tc_read_file(out, &bin, &binlen, &err) || binlen == 0) {
        tc_error_plain(diag, "ptxas produced no cubin");
        free(bin);
    } else {
        *cubin = bin;
        *cubin_size = binlen;
        if (info && msg) tc_strbuf_putn(info, msg, msglen);
        ok = true;
    }
    free(msg);
cleanup:
    unlink(in);
    unlink(out);
    unlink(log);
    rmdir(dir);
    return ok;
}
