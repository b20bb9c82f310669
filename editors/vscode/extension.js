// The fairspec extension: starts `fairspec lsp` (the language server, over stdio)
// for .fair files. The command can be changed in the settings (fairspec.server.command),
// e.g. ["python", "-m", "fairspec.cli", "lsp"] for a virtual environment.
"use strict";

const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const [command, ...args] = vscode.workspace
    .getConfiguration("fairspec")
    .get("server.command", ["fairspec", "lsp"]);
  const serverOptions = { command, args, transport: TransportKind.stdio };
  const clientOptions = {
    documentSelector: [{ scheme: "file", language: "fairspec" }],
    synchronize: {
      // model, data and imported spec files: the server re-reads them when they change
      fileEvents: vscode.workspace.createFileSystemWatcher("**/*.{fair,onnx,pt,skops,pkl,json,txt,ubj,csv,data,parquet}"),
    },
  };
  client = new LanguageClient("fairspec", "fairspec", serverOptions, clientOptions);
  context.subscriptions.push({ dispose: () => client && client.stop() });
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
