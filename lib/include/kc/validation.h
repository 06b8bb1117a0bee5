/*
 * Kubernetes name and label validation, with upstream's messages
 * (k8s.io/apimachinery/pkg/util/validation, as of Kubernetes 1.32, the
 * version the devcluster serves).
 *
 * Each kc_valid_*() check fills a struct kc_valid with the messages
 * upstream's function of the same name returns, in its order, and
 * returns their count: 0 means valid. The messages are what follows
 * "Invalid value: \"x\": " in a field error. The kc_valid_is_*()
 * predicates test only the pattern, not the length. None allocate.
 *
 *	struct kc_valid v;
 *
 *	if (kc_valid_dns1123_subdomain(kc_str_from(name), &v) > 0)
 *		for (size_t i = 0; i < v.n; i++)
 *			field_invalid("metadata.name", name, v.msg[i]);
 */
#ifndef KC_VALIDATION_H
#define KC_VALIDATION_H

#include <stdbool.h>
#include <stddef.h>

#include <kc/str.h>

#define KC_VALID_MSGS_MAX	4
#define KC_VALID_MSG_MAX	448

#define KC_DNS1123_LABEL_MAX		63
#define KC_DNS1123_SUBDOMAIN_MAX	253
#define KC_DNS1035_LABEL_MAX		63
#define KC_QUALIFIED_NAME_MAX		63	/* the name part */
#define KC_LABEL_VALUE_MAX		63

struct kc_valid {
	size_t	n;
	char	msg[KC_VALID_MSGS_MAX][KC_VALID_MSG_MAX];
};

/* IsDNS1123Label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 (namespaces). */
size_t	kc_valid_dns1123_label(struct kc_str, struct kc_valid *);
/* IsDNS1123Subdomain: such labels joined by '.', at most 253 (most names). */
size_t	kc_valid_dns1123_subdomain(struct kc_str, struct kc_valid *);
/* IsDNS1035Label: [a-z]([-a-z0-9]*[a-z0-9])?, at most 63 (Services). */
size_t	kc_valid_dns1035_label(struct kc_str, struct kc_valid *);
/* IsQualifiedName: [prefix/]name, a subdomain prefix (label keys). */
size_t	kc_valid_qualified_name(struct kc_str, struct kc_valid *);
/* IsValidLabelValue: empty, or a name part of at most 63. */
size_t	kc_valid_label_value(struct kc_str, struct kc_valid *);
/* IsConfigMapKey: [-._a-zA-Z0-9]+, at most 253, not "." nor "..*". */
size_t	kc_valid_config_map_key(struct kc_str, struct kc_valid *);

bool	kc_valid_is_dns1123_label(struct kc_str);
bool	kc_valid_is_dns1123_subdomain(struct kc_str);
bool	kc_valid_is_dns1035_label(struct kc_str);
/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]: a qualified name's name part. */
bool	kc_valid_is_qualified_part(struct kc_str);

#endif
