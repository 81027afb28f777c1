// Tool changes mid-conversation: /readonly keeps only `read`, /all brings the four back. pi
// declares each change in a system message of the transcript; models that accept system
// messages mid-conversation get it in place (the request shape depends on the API and compat).
export default function (pi: any) {
  pi.registerCommand("readonly", {
    handler: async (_args: string, ctx: any) => {
      pi.setActiveTools(["read"]);
      ctx.ui.notify(`tools=${pi.getActiveTools().join(",")}`);
    },
  });
  pi.registerCommand("all", {
    handler: async (_args: string, ctx: any) => {
      pi.setActiveTools(["read", "bash", "edit", "write"]);
      ctx.ui.notify(`tools=${pi.getActiveTools().join(",")}`);
    },
  });
}
