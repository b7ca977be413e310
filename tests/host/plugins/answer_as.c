/* answer_as.c — answers what the signed body asks for: "status=NNN;body=TEXT" (TEXT to the end,
   may be empty). For the answer-rule tests (host/responder.h AnswerProblem). */
#include <stdlib.h>

#include "common.h"

static int handle(cg_call *call, const char *route, const cg_request *req) {
  (void)route;
  char text[256];
  size_t n = req->body.len < sizeof text - 1 ? req->body.len : sizeof text - 1;
  memcpy(text, req->body.data, n);
  text[n] = '\0';
  if (strncmp(text, "status=", 7) != 0) return 1;
  int status = atoi(text + 7);
  const char *body = strstr(text, ";body=");
  body = body == NULL ? "" : body + 6;
  g_host->respond(call, status, "text/plain", test_str(body));
  return 0;
}
TEST_PLUGIN(handle, 0)
