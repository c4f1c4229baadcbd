"""List and watch ConfigMaps on a `fleet server` with the official python `kubernetes` client.

Run by crates/cli/tests/server_python.rs. Protocol on stdout (one line each):
  VERSION <client version>
  LIST <resourceVersion> <name> <name> ...
  WATCHING
  EVENT <TYPE> <name> <resourceVersion>
The script exits 0 after it has seen the events named on the command line, 1 on timeout.
"""
import sys
import time

import kubernetes
from kubernetes import client, config, watch


def main():
    kubeconfig, namespace, expected = sys.argv[1], sys.argv[2], sys.argv[3:]
    print("VERSION", kubernetes.__version__, flush=True)
    config.load_kube_config(config_file=kubeconfig)
    v1 = client.CoreV1Api()

    listed = v1.list_namespaced_config_map(namespace, label_selector="suite=python")
    names = sorted(cm.metadata.name for cm in listed.items)
    print("LIST", listed.metadata.resource_version, *names, flush=True)

    # The discovery-based dynamic client must also work (python uses legacy discovery).
    dyn = kubernetes.dynamic.DynamicClient(client.ApiClient())
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
    dyn_names = sorted(i.metadata.name for i in cms.get(namespace=namespace, label_selector="suite=python").items)
    if dyn_names != names:
        print("MISMATCH dynamic client listed", dyn_names, flush=True)
        return 1

    remaining = list(expected)  # e.g. ADDED:new MODIFIED:new DELETED:new
    w = watch.Watch()
    print("WATCHING", flush=True)
    deadline = time.time() + 60
    for event in w.stream(
        v1.list_namespaced_config_map,
        namespace,
        label_selector="suite=python",
        resource_version=listed.metadata.resource_version,
        timeout_seconds=60,
    ):
        obj = event["object"]
        print("EVENT", event["type"], obj.metadata.name, obj.metadata.resource_version, flush=True)
        key = "%s:%s" % (event["type"], obj.metadata.name)
        if remaining and key == remaining[0]:
            remaining.pop(0)
        if not remaining:
            w.stop()
            return 0
        if time.time() > deadline:
            break
    print("MISSING", *remaining, flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
