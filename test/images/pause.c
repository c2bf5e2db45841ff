/*
 * pause: the process that holds a pod sandbox's namespaces open.
 *
 * It does nothing until SIGTERM or SIGINT arrives, then exits 0. As PID 1 of the sandbox's PID
 * namespace (when the pod shares one) it also reaps orphaned children, so zombies never pile up.
 *
 * Signals are blocked outside sigsuspend(): a signal that arrives between the loop's check and
 * the wait is held pending and delivered inside sigsuspend(), so a stop request is never lost.
 *
 * Built static (gcc -static -Os) so the image needs no libc: see build.sh.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig) {
  (void)sig;
  stop_requested = 1;
}

/* Reaps every child that has exited; waitpid may change errno, which the interrupted code owns. */
static void on_child(int sig) {
  int saved_errno = errno;
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
  errno = saved_errno;
}

static int install(int sig, void (*handler)(int), int flags) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = handler;
  sa.sa_flags = flags;
  sigfillset(&sa.sa_mask);
  return sigaction(sig, &sa, NULL);
}

int main(int argc, char **argv) {
  sigset_t handled, during_wait;
  (void)argv;
  if (argc > 1) {
    fprintf(stderr, "pause takes no arguments\n");
    return 2;
  }
  if (getpid() != 1) {
    fprintf(stderr, "pause: warning: not running as PID 1, orphans are reaped only if they are ours\n");
  }
  sigemptyset(&handled);
  sigaddset(&handled, SIGTERM);
  sigaddset(&handled, SIGINT);
  sigaddset(&handled, SIGCHLD);
  if (sigprocmask(SIG_BLOCK, &handled, &during_wait) != 0) {
    perror("pause: sigprocmask");
    return 1;
  }
  sigdelset(&during_wait, SIGTERM);
  sigdelset(&during_wait, SIGINT);
  sigdelset(&during_wait, SIGCHLD);
  if (install(SIGTERM, on_stop, 0) != 0 || install(SIGINT, on_stop, 0) != 0 ||
      install(SIGCHLD, on_child, SA_NOCLDSTOP) != 0) {
    perror("pause: sigaction");
    return 1;
  }
  while (!stop_requested) {
    sigsuspend(&during_wait);
  }
  return 0;
}
