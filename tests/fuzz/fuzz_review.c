/*
 * fuzz_review.c: the controller's ConversionReview handler
 * (controller/review.c with ty_convert()), the body of a POST /convert
 * as kube-apiserver sends it. Every answer is an HTTP status; a 200 is
 * a ConversionReview that parses.
 */
#include <errno.h>

#include <kc/buf.h>
#include <kc/err.h>
#include <kc/json.h>

#include "../../controller/convert.h"
#include "../../controller/webhook.h"

#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_object *ans = NULL;
	struct review_info info;
	struct kc_buf out;
	int code;

	if (size > FUZZ_INPUT_MAX)
		return 0;
	kc_buf_init(&out, REVIEW_ANSWER_MAX);
	code = review_handle((const char *)data, size, ty_convert, &out, &info);
	FUZZ_CHECK(code == 200 || code == 400 || code == 413 || code == -ENOMEM ||
	    code == -E2BIG);
	if (code == 200) {
		FUZZ_CHECK(kc_json_parse(out.data, out.len, &ans, NULL) == 0);
		FUZZ_CHECK(kc_json_str(ans, "kind") != NULL);
		json_object_put(ans);
	}
	kc_buf_free(&out);
	return 0;
}
