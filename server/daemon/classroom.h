/* A class out of the box (issue 31): the teacher token grainlabd makes for itself on first start,
 * and what a classroom on this machine's network needs to know of it (its addresses). */
#ifndef GRAINLAB_CLASSROOM_H
#define GRAINLAB_CLASSROOM_H

#include <stdbool.h>
#include <stddef.h>

/* The teacher token kept in DATA_DIR/teacher.token: read, or made (32 hex digits from the
 * kernel's random source, the file mode 0600) when there is none. 0, or -1 with why. */
int classroom_teacher_token(const char *data_dir, char *token, size_t size, bool *made, char *why,
                            size_t whylen);

/* The names this machine answers to on its networks, as a comma list for allowed-hosts: localhost,
 * 127.0.0.1, every IPv4 address of an interface that is up, its host name and NAME.local. */
void classroom_hosts(char *out, size_t size);

/* The address students on the network open: the first IPv4 address of an interface that is up
 * and not the loopback (a private one first); "127.0.0.1" when there is none. */
void classroom_address(char *out, size_t size);

#endif
