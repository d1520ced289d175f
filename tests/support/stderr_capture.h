/* Captures what a test process writes to stderr (cairn's log lines), for the C and Fortran
 * tests that check what cairn logs. C99 and POSIX. */
#ifndef CAIRN_TESTS_STDERR_CAPTURE_H
#define CAIRN_TESTS_STDERR_CAPTURE_H

/* Sends this process's stderr (file descriptor 2) into the file `path`, truncated, until
 * test_stderr_capture_end(). Returns 0, or -1 when it cannot (stderr is then unchanged). Local;
 * one capture at a time. */
int test_stderr_capture_begin(const char* path);

/* Gives stderr back and returns 1 when what was captured contains `text`, 0 when it does not,
 * -1 when no capture was running or the file cannot be read. The captured text is then written
 * to stderr, so that a failing test still shows it. Local. */
int test_stderr_capture_end(const char* text);

#endif
