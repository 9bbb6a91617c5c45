/* An LD_PRELOAD shim for the remote-file tests (tests/test_http.c): getaddrinfo() answers
 * EAI_NONAME for every host name except "localhost" and numeric addresses, as a resolver
 * that does not know the name would, and without asking any resolver. A test can so see the
 * tool's message for a host that does not resolve while nothing leaves the machine. Each
 * refusal is said on standard error ("no_resolve: NAME"), so the test can check the shim was
 * loaded. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

static int local_or_numeric(const char *node)
{
    if (strcasecmp(node, "localhost") == 0)
        return 1;
    /* a numeric address needs no resolver: ask getaddrinfo with AI_NUMERICHOST to tell */
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_flags = AI_NUMERICHOST;
    int (*real)(const char *, const char *, const struct addrinfo *, struct addrinfo **) =
        (__typeof__(real))dlsym(RTLD_NEXT, "getaddrinfo");
    if (real(node, NULL, &hints, &res) != 0)
        return 0;
    freeaddrinfo(res);
    return 1;
}

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res)
{
    int (*real)(const char *, const char *, const struct addrinfo *, struct addrinfo **) =
        (__typeof__(real))dlsym(RTLD_NEXT, "getaddrinfo");
    if (node && !local_or_numeric(node)) {
        fprintf(stderr, "no_resolve: %s\n", node);
        return EAI_NONAME;
    }
    return real(node, service, hints, res);
}
