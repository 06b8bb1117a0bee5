#!/usr/bin/env python3
"""The official Python client (python3-kubernetes) against a devcluster.

Drives what a Python controller or notebook does, through the client's own
API classes: configuration from the devcluster's kubeconfig, list with
paging, watch (Watch().stream, resourceVersion, timeoutSeconds, bookmarks),
create, the four patch types, delete with each propagation policy, pod
logs, exec over a websocket (kubernetes.stream), Runs through
CustomObjectsApi, status subresource included, and DynamicClient's
discovery.

    KUBECONFIG=... python3 tests/e2e/python/test_client.py [NAME...]

Plain Python: every check is a function named check_*, run in file order;
one line per check ("ok NAME" or "FAIL NAME: why") and exit status 1 when
any failed. NAME arguments run only those checks. Needs CRDS_DIR (the
repository's crds/) for the Run checks.
"""

import contextlib
import json
import os
import sys
import threading
import time
import traceback

import yaml
from kubernetes import client, config, dynamic, utils, watch
from kubernetes.client.rest import ApiException
from kubernetes.stream import stream

NS = "py"
GROUP, VERSION, PLURAL = "trainyard.dev", "v1beta1", "runs"

config.load_kube_config(config_file=os.environ["KUBECONFIG"])
API = client.ApiClient()
CORE = client.CoreV1Api(API)
APPS = client.AppsV1Api(API)
EXT = client.ApiextensionsV1Api(API)
CUSTOM = client.CustomObjectsApi(API)


@contextlib.contextmanager
def content_type(ctype):
    """The client picks JSON patch for a list and strategic merge patch
    for a dict; a merge patch or an apply sets the header itself."""
    API.set_default_header("Content-Type", ctype)
    try:
        yield
    finally:
        del API.default_headers["Content-Type"]


def raw(method, path, query=None, body=None):
    """A request through the client's ApiClient: (status, decoded body)."""
    try:
        resp = API.call_api(path, method, query_params=query or [], body=body,
                            header_params={"Accept": "application/json"},
                            auth_settings=["BearerToken"],
                            _preload_content=False, _return_http_data_only=True)
        return resp.status, json.loads(resp.data or b"null")
    except ApiException as e:
        return e.status, json.loads(e.body)


def expect_api_error(status, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except ApiException as e:
        assert e.status == status, "status %d, want %d: %s" % (e.status, status, e.body)
        return json.loads(e.body)
    raise AssertionError("%s succeeded, want %d" % (fn.__name__, status))


def wait_for(what, cond, secs=10.0):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def cm(name, data=None, owner=None):
    meta = client.V1ObjectMeta(name=name, labels={"suite": "py"})
    if owner is not None:
        meta.owner_references = [client.V1OwnerReference(
            api_version="v1", kind="ConfigMap", name=owner.metadata.name,
            uid=owner.metadata.uid, block_owner_deletion=True)]
    return client.V1ConfigMap(metadata=meta, data=data or {"k": "v"})


def gone(name):
    def f():
        try:
            CORE.read_namespaced_config_map(name, NS)
            return False
        except ApiException as e:
            return e.status == 404
    return f


def check_config_and_version():
    v = client.VersionApi(API).get_code()
    assert v.major == "1" and v.git_version.startswith("v1."), v
    names = [n.metadata.name for n in CORE.list_namespace().items]
    assert "default" in names and "kube-system" in names, names
    CORE.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))
    assert CORE.read_namespace(NS).status.phase == "Active"


def check_list_paging():
    for i in range(7):
        CORE.create_namespaced_config_map(NS, cm("page-%d" % i))
    seen, token, pages, rv = [], None, 0, None
    while True:
        kw = {"_continue": token} if token else {}
        lst = CORE.list_namespaced_config_map(NS, limit=3, label_selector="suite=py", **kw)
        pages += 1
        seen += [c.metadata.name for c in lst.items]
        if rv is None:
            rv = lst.metadata.resource_version
            # Unset under a selector, as upstream.
            assert lst.metadata.remaining_item_count is None, lst.metadata
        else:
            # Every page is read at the first page's resourceVersion.
            assert lst.metadata.resource_version == rv, (lst.metadata, rv)
        token = lst.metadata._continue
        if not token:
            break
    assert pages == 3, pages
    assert seen == ["page-%d" % i for i in range(7)], seen
    total = len(CORE.list_namespaced_config_map(NS).items)
    lst = CORE.list_namespaced_config_map(NS, limit=2)
    assert lst.metadata.remaining_item_count == total - 2, (lst.metadata, total)
    # A page read from the snapshot does not see later writes.
    first = CORE.list_namespaced_config_map(NS, limit=2, label_selector="suite=py")
    CORE.create_namespaced_config_map(NS, cm("page-9"))
    rest = CORE.list_namespaced_config_map(NS, label_selector="suite=py",
                                           _continue=first.metadata._continue)
    assert "page-9" not in [c.metadata.name for c in rest.items]
    assert len(CORE.list_namespaced_config_map(NS, label_selector="suite=py").items) == 8
    # resourceVersion=0 with limit: any version; the list is still complete.
    lst = CORE.list_namespaced_config_map(NS, resource_version="0",
                                          label_selector="suite=py")
    assert len(lst.items) == 8
    body = expect_api_error(400, CORE.list_namespaced_config_map, NS,
                            _continue="not-a-token")
    assert body["reason"] == "BadRequest", body
    assert "continue key is not valid" in body["message"], body


def check_query_parameters():
    path = "/api/v1/namespaces/%s/configmaps" % NS
    status, body = raw("GET", path, [("limit", "abc")])
    assert status == 400, (status, body)
    assert body["message"] == 'strconv.ParseInt: parsing "abc": invalid syntax', body
    status, body = raw("GET", path, [("limit", "")])
    assert status == 400 and body["message"] == \
        'strconv.ParseInt: parsing "": invalid syntax', body
    status, body = raw("GET", path, [("limit", "99999999999999999999")])
    assert status == 400 and body["message"] == \
        'strconv.ParseInt: parsing "99999999999999999999": value out of range', body
    status, body = raw("GET", path, [("timeoutSeconds", "1s")])
    assert status == 400 and body["message"] == \
        'strconv.ParseInt: parsing "1s": invalid syntax', body
    # Go's ParseInt takes a sign; the first of repeated values counts;
    # unknown parameters are ignored.
    status, body = raw("GET", path, [("limit", "+2"), ("limit", "x"), ("bogus", "1")])
    assert status == 200 and len(body["items"]) == 2, (status, body)
    status, body = raw("GET", path + "/page-0", [("pretty", "true"), ("bogus", "")])
    assert status == 200 and body["metadata"]["name"] == "page-0", body


def check_watch_stream():
    rv = CORE.list_namespaced_config_map(NS).metadata.resource_version

    def writer():
        time.sleep(0.3)
        CORE.create_namespaced_config_map(NS, cm("w-1"))
        CORE.patch_namespaced_config_map("w-1", NS, {"data": {"k": "changed"}})
        CORE.delete_namespaced_config_map("w-1", NS)

    t = threading.Thread(target=writer)
    t.start()
    events, w = [], watch.Watch()
    for ev in w.stream(CORE.list_namespaced_config_map, NS, resource_version=rv,
                       field_selector="metadata.name=w-1", timeout_seconds=5):
        events.append((ev["type"], ev["object"].metadata.name,
                       (ev["object"].data or {}).get("k")))
        if ev["type"] == "DELETED":
            w.stop()
    t.join()
    assert events == [("ADDED", "w-1", "v"), ("MODIFIED", "w-1", "changed"),
                      ("DELETED", "w-1", "changed")], events
    # The watcher's resourceVersion followed the events.
    assert int(w.resource_version) > int(rv), (w.resource_version, rv)
    # Replay from a resourceVersion: the same three events, then the
    # server's timeoutSeconds ends the stream.
    start = time.monotonic()
    replay = [(e["type"], e["object"].metadata.name)
              for e in watch.Watch().stream(CORE.list_namespaced_config_map, NS,
                                            resource_version=rv, timeout_seconds=1,
                                            field_selector="metadata.name=w-1")]
    assert replay == [("ADDED", "w-1"), ("MODIFIED", "w-1"), ("DELETED", "w-1")], replay
    assert time.monotonic() - start < 4


def check_watch_bookmarks_and_expiry():
    rv = CORE.list_namespaced_config_map(NS).metadata.resource_version
    # One bookmark, 2 s before the timeout (as the watch cache sends it);
    # Watch().stream passes it on undecoded.
    start = time.monotonic()
    evs = list(watch.Watch().stream(CORE.list_namespaced_config_map, NS,
                                    resource_version=rv, allow_watch_bookmarks=True,
                                    timeout_seconds=3))
    assert [e["type"] for e in evs] == ["BOOKMARK"], evs
    obj = evs[0]["raw_object"]
    assert obj["kind"] == "ConfigMap" and obj["apiVersion"] == "v1", obj
    assert int(obj["metadata"]["resourceVersion"]) >= int(rv), (obj, rv)
    assert 2.5 < time.monotonic() - start < 10
    # A resourceVersion ahead of the server: the client raises what it got.
    try:
        list(watch.Watch().stream(CORE.list_namespaced_config_map, NS,
                                  resource_version=str(int(rv) + 1000000),
                                  timeout_seconds=1))
    except ApiException as e:
        body = json.loads(e.body)
        assert e.status == 504 and body["reason"] == "Timeout", e
        assert "Too large resource version" in body["message"], body
        assert body["details"]["retryAfterSeconds"] == 1, body
    else:
        raise AssertionError("a watch from a future resourceVersion succeeded")


def check_patch_types():
    CORE.create_namespaced_config_map(NS, cm("p", {"a": "1", "b": "2"}))
    # A list body: JSON patch.
    out = CORE.patch_namespaced_config_map("p", NS, [
        {"op": "replace", "path": "/data/a", "value": "10"},
        {"op": "remove", "path": "/data/b"}])
    assert out.data == {"a": "10"}, out.data
    body = expect_api_error(422, CORE.patch_namespaced_config_map, "p", NS,
                            [{"op": "test", "path": "/data/a", "value": "nope"}])
    assert body["reason"] == "Invalid", body
    # A dict body: strategic merge patch (containers merge by name).
    dep = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="sm"),
        spec=client.V1DeploymentSpec(
            replicas=0,
            selector=client.V1LabelSelector(match_labels={"app": "sm"}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": "sm"}),
                spec=client.V1PodSpec(containers=[
                    client.V1Container(name="a", image="busybox"),
                    client.V1Container(name="b", image="busybox")]))))
    APPS.create_namespaced_deployment(NS, dep)
    out = APPS.patch_namespaced_deployment("sm", NS, {"spec": {"template": {"spec": {
        "containers": [{"name": "b", "image": "busybox:2"}]}}}})
    imgs = [(c.name, c.image) for c in out.spec.template.spec.containers]
    assert imgs == [("a", "busybox"), ("b", "busybox:2")], imgs
    # Merge patch: a list replaces the whole list, null removes a key.
    with content_type("application/merge-patch+json"):
        out = CORE.patch_namespaced_config_map("p", NS, {"data": {"a": None, "c": "3"}})
    assert out.data == {"c": "3"}, out.data
    # Server-side apply: field manager, a conflict, then force.
    applied = yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": "ssa"}, "data": {"x": "1"}})
    with content_type("application/apply-patch+yaml"):
        out = CORE.patch_namespaced_config_map("ssa", NS, applied, field_manager="py-a")
        assert out.data == {"x": "1"}, out.data
        mgrs = [(m.manager, m.operation) for m in out.metadata.managed_fields]
        assert ("py-a", "Apply") in mgrs, mgrs
        other = applied.replace('"1"', '"2"').replace("'1'", "'2'")
        body = expect_api_error(409, CORE.patch_namespaced_config_map, "ssa", NS,
                                other, field_manager="py-b")
        assert body["reason"] == "Conflict", body
        assert 'conflict with "py-a"' in body["message"], body
        out = CORE.patch_namespaced_config_map("ssa", NS, other, field_manager="py-b",
                                               force=True)
        assert out.data == {"x": "2"}, out.data
        body = expect_api_error(422, CORE.patch_namespaced_config_map, "ssa", NS, applied)
        assert body["message"] == ('PatchOptions.meta.k8s.io "" is invalid: fieldManager: '
                                   'Required value: is required for apply patch'), body
    # A dry run changes nothing.
    out = CORE.patch_namespaced_config_map("p", NS, {"data": {"c": "dry"}}, dry_run="All")
    assert out.data["c"] == "dry"
    assert CORE.read_namespaced_config_map("p", NS).data["c"] == "3"


def check_delete_propagation():
    opts = client.V1DeleteOptions
    # Orphan: the dependent stays, without its ownerReference.
    owner = CORE.create_namespaced_config_map(NS, cm("own-o"))
    CORE.create_namespaced_config_map(NS, cm("dep-o", owner=owner))
    CORE.delete_namespaced_config_map("own-o", NS, body=opts(propagation_policy="Orphan"))
    wait_for("own-o to go", gone("own-o"))
    wait_for("dep-o to lose its owner", lambda: not CORE.read_namespaced_config_map(
        "dep-o", NS).metadata.owner_references)
    # Background: the owner goes at once, the dependent after.
    owner = CORE.create_namespaced_config_map(NS, cm("own-b"))
    CORE.create_namespaced_config_map(NS, cm("dep-b", owner=owner))
    st = CORE.delete_namespaced_config_map("own-b", NS,
                                           body=opts(propagation_policy="Background"))
    assert st.status == "Success" or st.metadata is not None, st
    wait_for("own-b to go", gone("own-b"))
    wait_for("dep-b to go", gone("dep-b"))
    # Foreground: the owner waits, with the foregroundDeletion finalizer,
    # for its dependents.
    owner = CORE.create_namespaced_config_map(NS, cm("own-f"))
    dep = cm("dep-f", owner=owner)
    dep.metadata.finalizers = ["trainyard.dev/hold"]
    CORE.create_namespaced_config_map(NS, dep)
    CORE.delete_namespaced_config_map("own-f", NS, propagation_policy="Foreground")
    o = wait_for("own-f to be deleting", lambda: CORE.read_namespaced_config_map(
        "own-f", NS))
    assert o.metadata.deletion_timestamp is not None, o.metadata
    assert "foregroundDeletion" in (o.metadata.finalizers or []), o.metadata
    wait_for("dep-f to be deleting", lambda: CORE.read_namespaced_config_map(
        "dep-f", NS).metadata.deletion_timestamp)
    CORE.patch_namespaced_config_map("dep-f", NS, [
        {"op": "remove", "path": "/metadata/finalizers"}])
    wait_for("dep-f to go", gone("dep-f"))
    wait_for("own-f to go", gone("own-f"))
    # A bad policy, and a grace period through the body.
    CORE.create_namespaced_config_map(NS, cm("bad-policy"))
    body = expect_api_error(422, CORE.delete_namespaced_config_map, "bad-policy", NS,
                            body=opts(propagation_policy="Sideways"))
    assert "Unsupported value" in body["message"], body
    CORE.delete_namespaced_config_map("bad-policy", NS,
                                      body=opts(grace_period_seconds=0))
    wait_for("bad-policy to go", gone("bad-policy"))
    expect_api_error(404, CORE.delete_namespaced_config_map, "bad-policy", NS)


def pod(name, annotations):
    ann = {"devcluster.trainyard.dev/" + k: v for k, v in annotations.items()}
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, annotations=ann),
        spec=client.V1PodSpec(restart_policy="Never", termination_grace_period_seconds=1,
                              containers=[client.V1Container(name="main",
                                                             image="busybox")]))


def running(name, done_too=False):
    phases = ("Running", "Succeeded") if done_too else ("Running",)
    return lambda: CORE.read_namespaced_pod(name, NS).status.phase in phases


def check_pod_logs():
    CORE.create_namespaced_pod(NS, pod("talk", {"log": "alpha\nbeta\ngamma"}))
    wait_for("talk to run", running("talk"))
    assert CORE.read_namespaced_pod_log("talk", NS) == "alpha\nbeta\ngamma\n"
    assert CORE.read_namespaced_pod_log("talk", NS, tail_lines=1) == "gamma\n"
    lines = CORE.read_namespaced_pod_log("talk", NS, tail_lines=2,
                                         timestamps=True).splitlines()
    assert len(lines) == 2 and lines[1].endswith("Z gamma"), lines
    assert lines[0][4] == "-" and lines[0][10] == "T", lines
    body = expect_api_error(400, CORE.read_namespaced_pod_log, "talk", NS,
                            container="nope")
    assert 'container nope is not valid for pod talk' in body["message"], body
    # follow: lines as they come, the stream ends with the container.
    CORE.create_namespaced_pod(NS, pod("tick", {"log": "one\ntwo\nthree",
                                                "log-interval": "200ms",
                                                "run-seconds": "1"}))
    wait_for("tick to run", running("tick", done_too=True))
    got = [line for line in watch.Watch().stream(CORE.read_namespaced_pod_log,
                                                 "tick", NS)]
    assert got == ["one", "two", "three"], got
    resp = CORE.read_namespaced_pod_log("tick", NS, follow=True, _preload_content=False)
    assert resp.data == b"one\ntwo\nthree\n", resp.data


def check_exec():
    CORE.create_namespaced_pod(NS, pod("shell", {}))
    wait_for("shell to run", running("shell"))
    out = stream(CORE.connect_get_namespaced_pod_exec, "shell", NS,
                 command=["echo", "hello", "world"],
                 stderr=True, stdin=False, stdout=True, tty=False)
    assert out == "hello world\n", repr(out)
    out = stream(CORE.connect_get_namespaced_pod_exec, "shell", NS, command=["hostname"],
                 stderr=True, stdin=False, stdout=True, tty=False)
    assert out == "shell\n", repr(out)
    ws = stream(CORE.connect_get_namespaced_pod_exec, "shell", NS,
                command=["sh", "-c", "exit 3"], stderr=True, stdin=False,
                stdout=True, tty=False, _preload_content=False)
    ws.run_forever(timeout=5)
    assert ws.returncode == 3, ws.returncode
    # stdin through the websocket.
    ws = stream(CORE.connect_get_namespaced_pod_exec, "shell", NS, command=["cat"],
                stderr=True, stdin=True, stdout=True, tty=False,
                _preload_content=False)
    ws.write_stdin("piped\n")
    got = ""
    end = time.monotonic() + 5
    while "piped\n" not in got and time.monotonic() < end:
        ws.update(timeout=0.2)
        got += ws.read_stdout()
    ws.close()
    assert got == "piped\n", repr(got)


def check_custom_objects():
    with open(os.path.join(os.environ["CRDS_DIR"], "trainyard.dev_runs.yaml")) as f:
        crd = yaml.safe_load(f)
    EXT.create_custom_resource_definition(crd)
    wait_for("the Run CRD to be established", lambda: any(
        c.type == "Established" and c.status == "True"
        for c in EXT.read_custom_resource_definition("runs.trainyard.dev").status.conditions
        or []))
    run = {"apiVersion": "trainyard.dev/v1beta1", "kind": "Run",
           "metadata": {"name": "nb", "labels": {"team": "py"}},
           "spec": {"nodes": 1, "container": {"image": "busybox", "command": ["true"]}}}
    def create():
        try:
            return CUSTOM.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, run)
        except ApiException as e:
            if e.status != 404:
                raise
            return None
    out = wait_for("the Run to be created", create)
    assert out["metadata"]["name"] == "nb" and out["metadata"]["uid"], out
    got = CUSTOM.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "nb")
    assert got["spec"]["nodes"] == 1, got
    lst = CUSTOM.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL,
                                               label_selector="team=py", limit=1)
    assert [r["metadata"]["name"] for r in lst["items"]] == ["nb"], lst
    assert lst["kind"] == "RunList", lst["kind"]
    allns = CUSTOM.list_cluster_custom_object(GROUP, VERSION, PLURAL)
    assert "nb" in [r["metadata"]["name"] for r in allns["items"]]
    # patch: a merge patch; status is ignored on the main resource.
    out = CUSTOM.patch_namespaced_custom_object(
        GROUP, VERSION, NS, PLURAL, "nb",
        {"metadata": {"labels": {"stage": "2"}}, "status": {"phase": "Running"}})
    assert out["metadata"]["labels"] == {"team": "py", "stage": "2"}, out["metadata"]
    assert "phase" not in out.get("status", {}), out.get("status")
    # The status subresource.
    out = CUSTOM.patch_namespaced_custom_object_status(
        GROUP, VERSION, NS, PLURAL, "nb", {"status": {"phase": "Running"}})
    assert out["status"]["phase"] == "Running", out
    st = CUSTOM.get_namespaced_custom_object_status(GROUP, VERSION, NS, PLURAL, "nb")
    assert st["status"]["phase"] == "Running", st
    # A bad spec: the schema's 422.
    bad = json.loads(json.dumps(run))
    bad["metadata"]["name"] = "bad"
    bad["spec"]["nodes"] = "many"
    body = expect_api_error(422, CUSTOM.create_namespaced_custom_object,
                            GROUP, VERSION, NS, PLURAL, bad)
    assert "spec.nodes" in body["message"], body
    # Watch through CustomObjectsApi.
    rv = lst["metadata"]["resourceVersion"]
    evs = [(e["type"], e["object"]["metadata"]["name"]) for e in watch.Watch().stream(
        CUSTOM.list_namespaced_custom_object, GROUP, VERSION, NS, PLURAL,
        resource_version=rv, timeout_seconds=1)]
    assert ("MODIFIED", "nb") in evs, evs
    CUSTOM.delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "nb",
                                           body=client.V1DeleteOptions(
                                               propagation_policy="Foreground"))
    wait_for("the Run to go", lambda: not CUSTOM.list_namespaced_custom_object(
        GROUP, VERSION, NS, PLURAL)["items"])


def check_dynamic_client():
    # Discovery (/api, /apis, the Run CRD's group) through DynamicClient,
    # as a notebook that knows no model classes works.
    dyn = dynamic.DynamicClient(client.ApiClient())
    runs = dyn.resources.get(api_version="trainyard.dev/v1beta1", kind="Run")
    assert runs.namespaced and runs.name == "runs", runs
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
    utils.create_from_dict(API, {"apiVersion": "v1", "kind": "ConfigMap",
                                 "metadata": {"name": "dyn", "namespace": NS},
                                 "data": {"a": "1"}})
    out = cms.patch(body={"data": {"a": "2"}}, name="dyn", namespace=NS,
                    content_type="application/merge-patch+json")
    assert out.data.a == "2", out
    lst = cms.get(namespace=NS, limit=1)
    assert len(lst.items) == 1 and lst.metadata["continue"], lst.metadata
    names = [e["object"].metadata.name for e in cms.watch(
        namespace=NS, field_selector="metadata.name=dyn", timeout=1)]
    assert names == ["dyn"], names
    cms.delete(name="dyn", namespace=NS)
    wait_for("dyn to go", gone("dyn"))


def main():
    want = set(sys.argv[1:])
    checks = [(n[len("check_"):], f) for n, f in globals().items()
              if n.startswith("check_") and callable(f)]
    failed = 0
    for name, fn in checks:
        if want and name not in want:
            continue
        start = time.monotonic()
        try:
            fn()
            print("ok %s (%.1fs)" % (name, time.monotonic() - start), flush=True)
        except Exception as e:  # noqa: BLE001 -- report and go on
            failed += 1
            print("FAIL %s: %s: %s" % (name, type(e).__name__, e), flush=True)
            traceback.print_exc(file=sys.stdout)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
