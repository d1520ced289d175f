/* Captures stderr into a file: see stderr_capture.h. */
#define _POSIX_C_SOURCE 200809L
#include "stderr_capture.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int saved_stderr = -1;
static char captured_path[4096];

int test_stderr_capture_begin(const char* path) {
  int fd;
  if (saved_stderr >= 0 || strlen(path) >= sizeof captured_path) return -1;
  fflush(stderr);
  fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return -1;
  saved_stderr = dup(STDERR_FILENO);
  if (saved_stderr < 0 || dup2(fd, STDERR_FILENO) < 0) {
    close(fd);
    if (saved_stderr >= 0) close(saved_stderr);
    saved_stderr = -1;
    return -1;
  }
  close(fd);
  strcpy(captured_path, path);
  return 0;
}

int test_stderr_capture_end(const char* text) {
  FILE* file;
  char* content;
  long size;
  int found;
  if (saved_stderr < 0) return -1;
  fflush(stderr);
  dup2(saved_stderr, STDERR_FILENO);
  close(saved_stderr);
  saved_stderr = -1;
  file = fopen(captured_path, "rb");
  if (file == NULL) return -1;
  fseek(file, 0, SEEK_END);
  size = ftell(file);
  fseek(file, 0, SEEK_SET);
  content = malloc((size_t)size + 1);
  if (content == NULL || fread(content, 1, (size_t)size, file) != (size_t)size) {
    free(content);
    fclose(file);
    return -1;
  }
  fclose(file);
  content[size] = '\0';
  fputs(content, stderr);
  found = strstr(content, text) != NULL;
  free(content);
  return found;
}
