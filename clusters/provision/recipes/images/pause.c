/* The sandbox ("pause") process: holds the pod's namespaces, reaps zombies, exits on
 * SIGINT/SIGTERM. Built statically by the lab because no registry image can be pulled. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) { _exit(0); }

static void reap(int sig) {
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(void) {
    struct sigaction term = {.sa_handler = stop}, child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};
    sigaction(SIGINT, &term, NULL);
    sigaction(SIGTERM, &term, NULL);
    sigaction(SIGCHLD, &child, NULL);
    for (;;) pause();
}
