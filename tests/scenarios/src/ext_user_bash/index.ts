// Conformance test extension: user_bash handlers ({result}, undefined, bad shapes, throw).
export default function (pi: any) {
  pi.on("user_bash", async (event: any, ctx: any) => {
    const cmd: string = event.command;
    if (cmd.startsWith("fake ")) {
      ctx.ui.notify(`user_bash ${cmd} exclude=${event.excludeFromContext} cwdOk=${event.cwd === ctx.cwd}`);
      return { result: { output: `faked: ${cmd.slice(5)}\n`, exitCode: 3, cancelled: false, truncated: false } };
    }
    if (cmd.startsWith("extra ")) {
      return { result: { output: "with extras", exitCode: 0, cancelled: false, truncated: true, fullOutputPath: "/tmp/full.log", note: "x" } };
    }
    if (cmd.startsWith("badshape")) return { result: { output: 42, exitCode: 0, cancelled: false, truncated: false } };
    if (cmd.startsWith("missingexit")) return { result: { output: "no exit", cancelled: false, truncated: false } };
    if (cmd.startsWith("empty")) return {};
    if (cmd.startsWith("nullexit")) return { result: { output: "null exit", exitCode: null, cancelled: false, truncated: false } };
    if (cmd.startsWith("throw")) throw new Error("user_bash exploded");
    return undefined;
  });
}
