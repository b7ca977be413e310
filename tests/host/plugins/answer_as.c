/* answer_as.c — answers what the signed body asks for: "status=NNN;body=TEXT" anywhere in it (TEXT
   runs to the next '"' or the end, may be empty; in JSON:
   {"order_id":"1","ask":"status=204;body=x"}). For the answer-rule tests (host/http/responder.h
   AnswerProblem), in-process and packaged. */
#include <stdlib.h>

#include "common.h"

static int handle(cg_call *call, const char *route, const cg_request *req) {
  (void)route;
  char text[512];
  size_t n = req->body.len < sizeof text - 1 ? req->body.len : sizeof text - 1;
  memcpy(text, req->body.data, n);
  text[n] = '\0';
  const char *ask = strstr(text, "status=");
  if (ask == NULL) return 1;
  int status = atoi(ask + 7);
  char *body = strstr(ask, ";body=");
  body = body == NULL ? text + n : body + 6;
  char *end = strchr(body, '"');
  if (end != NULL) *end = '\0';
  g_host->respond(call, status, "text/plain", test_str(body));
  return 0;
}
TEST_PLUGIN(handle, 0)
