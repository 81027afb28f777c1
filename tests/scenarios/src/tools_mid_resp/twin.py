# The tool-changes extension of index.ts.


def initialize(msg):
    return {"subscriptions": [], "commands": [{"name": "readonly"}, {"name": "all"}]}


def on_command(name, args, scope):
    tools = ["read"] if name == "readonly" else ["read", "bash", "edit", "write"]
    fire(scope, "pi.setActiveTools", toolNames=tools)
    fire(scope, "ui.notify", message="tools=%s" % ",".join(call(scope, "pi.getActiveTools")))


if __name__ == "__main__":
    serve(initialize, on_command=on_command)
