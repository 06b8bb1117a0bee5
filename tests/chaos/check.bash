# check.bash: the chaos suite's invariants, read from the API alone.
#
# The checker knows nothing of the controller's internals: it reads the
# Runs, the objects labelled trainyard.dev/run, Projects, ProjectMembers
# and RoleBindings through kubectl, plus the log of a watch on every Run
# (chaos_watch_start), and says what breaks the product's promises:
#
#   duplicates  two pods for one (run, session, node index)
#   orphans     a pod, Service, NetworkPolicy or PodGroup whose Run is gone
#               (or is another Run of the same name), whose session ended,
#               or whose session the Run has not started
#   stuck       a Run not in the state the scenario expects within the bound
#   reasons     an ended session without exactly one end reason, a history
#               with a session twice, Finished disagreeing with the status
#   backwards   status.session lower than an earlier value of the same Run
#   overquota   a project's Runs holding more than its quota.hard at any
#               point the watch saw
#   bindings    a RoleBinding left for a removed ProjectMember
#
# Each check prints one line per problem on stdout, prefixed with its
# class, and returns non-zero when it found any.

CHAOS_KINDS="pods,services,networkpolicies,podgroups.scheduling.x-k8s.io"

# chaos_objects NS: the Runs and labelled objects of NS as one JSON list.
chaos_objects() {
	kubectl get "runs.trainyard.dev,$CHAOS_KINDS" -n "$1" -o json
}

# check_objects NS: duplicates and orphans in NS, from one read.
check_objects() {
	local out
	out="$(chaos_objects "$1" | jq -r '
	    [.items[] | select(.kind == "Run")] as $runs |
	    ($runs | map({key: .metadata.name, value: .}) | from_entries) as $by |
	    [.items[] | select(.kind != "Run") |
	     select(.metadata.labels["trainyard.dev/run"] != null)] as $objs |
	    # duplicates: (run, session, index) of live pods seen twice
	    ([$objs[] | select(.kind == "Pod") |
	      [.metadata.labels["trainyard.dev/run"],
	       .metadata.labels["trainyard.dev/session"],
	       .metadata.labels["trainyard.dev/node-index"]] | join("/")] |
	     group_by(.) | map(select(length > 1)) |
	     map("duplicates: pod " + .[0] + " x" + (length | tostring)) | .[]),
	    # orphans
	    ($objs[] |
	     .metadata.labels["trainyard.dev/run"] as $r |
	     (.metadata.labels["trainyard.dev/session"] // "0" | tonumber) as $s |
	     $by[$r] as $run |
	     ([.metadata.ownerReferences[]? | select(.controller == true) | .uid] | first) as $owner |
	     (.kind + " " + .metadata.name + " (session " + ($s | tostring) + ")") as $what |
	     if $run == null then "orphans: " + $what + ": Run " + $r + " is gone"
	     elif $owner != $run.metadata.uid then
	         "orphans: " + $what + ": owned by " + ($owner // "nobody") +
	         ", not by Run " + $r + " " + $run.metadata.uid
	     elif $s < ($run.status.session // 0) then
	         "orphans: " + $what + ": Run " + $r + " is at session " +
	         ($run.status.session | tostring)
	     elif $s > ($run.status.session // 0) then
	         "orphans: " + $what + ": Run " + $r + " never started it"
	     elif ($run.status.phase // "") as $p |
	         ["Succeeded", "Failed", "Stopped"] | index($p) then
	         "orphans: " + $what + ": session ended " + $run.status.phase + "/" +
	         ($run.status.reason // "")
	     else empty end)')" || return 2
	[ -z "$out" ] && return 0
	echo "$out"
	return 1
}

# check_reasons NS: every ended session has one end reason; Finished agrees.
check_reasons() {
	local out
	out="$(kubectl get runs.trainyard.dev -n "$1" -o json | jq -r '.items[] |
	    .metadata.name as $n | .status as $st |
	    ([$st.history[]?.session] | group_by(.) | map(select(length > 1)) |
	     map("reasons: Run " + $n + ": session " + (.[0] | tostring) +
	         " twice in history") | .[]),
	    ($st.history[]? | select(.endTime != null and ((.reason // "") == "")) |
	     "reasons: Run " + $n + ": session " + (.session | tostring) +
	     " ended without a reason"),
	    # InvalidSpec is a refusal before any session, not a session end.
	    (select((["Succeeded", "Failed", "Stopped"] | index($st.phase // "")) != null and
	         ($st.reason // "") != "InvalidSpec") |
	     ([$st.conditions[]? | select(.type == "Finished")] | first) as $f |
	     if ($st.reason // "") == "" then
	         "reasons: Run " + $n + ": phase " + $st.phase + " without a reason"
	     elif $f == null or $f.status != "True" or $f.reason != $st.reason then
	         "reasons: Run " + $n + ": Finished " + ($f.status // "absent") + "/" +
	         ($f.reason // "") + " but the status says " + $st.reason
	     else empty end)')" || return 2
	[ -z "$out" ] && return 0
	echo "$out"
	return 1
}

# check_bindings USER...: no RoleBinding anywhere names one of these users.
check_bindings() {
	local out users
	users="$(printf '%s\n' "$@" | jq -R . | jq -s -c .)"
	out="$(kubectl get rolebindings -A -o json | jq -r --argjson u "$users" '.items[] |
	    select(any(.subjects[]?; .kind == "User" and (.name as $n | $u | index($n)))) |
	    "bindings: RoleBinding " + .metadata.namespace + "/" + .metadata.name +
	    " still binds a removed member"')" || return 2
	[ -z "$out" ] && return 0
	echo "$out"
	return 1
}

# ---- the watch: status.session and quota over time -------------------------

# chaos_watch_start FILE: a watch on every Run (restarted whenever it ends:
# dropped watches, an API server restart) appending one JSON line per
# event: {k: ns/name, u: uid, s: session, p: project, q: reserved GPUs}.
chaos_watch_start() {
	local file="$1"
	(
		while [ ! -e "$file.stop" ]; do
			command kubectl --kubeconfig "$DC_DIR/kubeconfig" \
			    --cache-dir "$DC_DIR/cache" get runs.trainyard.dev -A -w \
			    -o json 2>/dev/null |
			    jq -c --unbuffered '{k: (.metadata.namespace + "/" + .metadata.name),
				u: .metadata.uid, s: (.status.session // 0),
				p: (.status.quota.project // ""),
				q: ((.status.quota.reserved["requests.nvidia.com/gpu"] //
				    .status.quota.reserved["nvidia.com/gpu"] // "0") | tonumber? // 0)}' \
			    >>"$file" 2>/dev/null
			sleep 0.2
		done
	) 3>&- &
	echo $! >"$file.pid"
}

chaos_watch_stop() {
	local file="$1"
	touch "$file.stop"
	[ -f "$file.pid" ] && kill "$(cat "$file.pid")" 2>/dev/null
	rm -f "$file.pid"
}

# check_sessions FILE: status.session never went down for one Run (uid).
check_sessions() {
	local out
	[ -s "$1" ] || return 0
	out="$(jq -s -r 'reduce .[] as $e ({seen: {}, bad: []};
	    if (.seen[$e.u] // 0) > $e.s then
	        .bad += ["backwards: Run " + $e.k + " went from session " +
	            (.seen[$e.u] | tostring) + " to " + ($e.s | tostring)]
	    else .seen[$e.u] = $e.s end) | .bad[]' "$1")" || return 2
	[ -z "$out" ] && return 0
	echo "$out"
	return 1
}

# check_quota FILE PROJECT HARD: at no event the watch saw did the Runs
# of PROJECT hold more than HARD GPUs together.
check_quota() {
	local out
	[ -s "$1" ] || return 0
	out="$(jq -s -r --arg p "$2" --argjson hard "$3" 'reduce .[] as $e ({held: {}, bad: []};
	    .held[$e.u] = (if $e.p == $p then $e.q else 0 end) |
	    ([.held[]] | add) as $sum |
	    if $sum > $hard then .bad += ["overquota: project " + $p + " held " +
	        ($sum | tostring) + " of " + ($hard | tostring) + " GPUs after " + $e.k]
	    else . end) | .bad | unique[]' "$1")" || return 2
	[ -z "$out" ] && return 0
	echo "$out"
	return 1
}
