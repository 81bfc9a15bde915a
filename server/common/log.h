/* One-line structured logs for grainlabd: "ts=... level=... event=... key=value ...", one line per
 * record on stderr (journald and container runtimes take it from there). Values with spaces are
 * quoted; nothing secret (tokens) is ever passed in. Thread-safe. */
#ifndef GRAINLAB_LOG_H
#define GRAINLAB_LOG_H

typedef enum log_level { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR } log_level;

/* Records below this level are dropped (default LOG_INFO). */
void log_set_level(log_level level);
/* Parse "debug", "info", "warn" or "error"; −1 if none. */
int log_parse_level(const char *name);
/* `event`: a short name (session_failed, ws_rejected, ...); `fmt`: the message, printf-style. Extra
 * key=value fields may follow in the message itself as " key=value". */
void log_msg(log_level level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
