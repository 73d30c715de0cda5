//! The MCP server's handler: its `initialize` info, `tools/list` and the tools' schemas, dispatching a
//! `tools/call`, and the error for a request that reaches no handler.

use std::sync::Arc;

use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CustomRequest, CustomResult, ErrorData,
    GetTaskParams, GetTaskResult, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;

use crate::tasks::{TaskSupport, task_required};
#[cfg(feature = "tracing")]
use crate::trace;
use crate::{McpServer, TASK_META_KEY};

/// A definition as rmcp's `Tool`: the MCP shape the definition writes, read back.
pub(crate) fn tool(definition: &tool_contract::define::Definition) -> Tool {
    serde_json::from_value(definition.mcp()).unwrap_or_else(|_| {
        Tool::new(
            definition.name(),
            definition.description().to_owned(),
            Arc::new(definition.input_schema().clone()),
        )
    })
}
/// The error for a request that reached no handler: a method this server serves whose params did not
/// read as that method's (invalid params, with serde's reason), or a method it does not serve.
fn malformed(method: &str, params: Option<Value>) -> ErrorData {
    const SERVED: [&str; 7] =
        ["initialize", "ping", "tools/list", "tools/call", "tasks/get", "tasks/update", "tasks/cancel"];
    if method == "tools/call" {
        let why = match serde_json::from_value::<CallToolRequestParams>(params.unwrap_or(Value::Null)) {
            Err(error) => error.to_string(),
            // They read now: rmcp refused something else of the request.
            Ok(_) => "the request does not match the MCP schema".to_owned(),
        };
        ErrorData::invalid_params(
            format!("`tools/call` takes params {{\"name\": a tool's name, \"arguments\": an object}}: {why}"),
            None,
        )
    } else if SERVED.contains(&method) {
        ErrorData::invalid_params(format!("the params of `{method}` do not match the MCP schema"), None)
    } else {
        let method: String = method.chars().take(64).collect();
        ErrorData::new(rmcp::model::ErrorCode::METHOD_NOT_FOUND, format!("no method `{method}` here"), None)
    }
}
impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = if self.inner.tasks.on {
            ServerCapabilities::builder().enable_tools().enable_tasks().build()
        } else {
            ServerCapabilities::builder().enable_tools().build()
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(self.inner.name.clone(), self.inner.version.clone()))
            .with_instructions(format!(
                "Every tool returns a report: outcome ok | retryable | permanent | unknown, and effect_applied \
                 separately. Name the task under `_meta` `{TASK_META_KEY}` so a re-sent call is recognised."
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.inner.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        #[cfg(feature = "tracing")]
        let span = trace::server_span(&request.name, Some(&context.id.to_string()), &context.meta);
        // A call a task may keep, from a client that takes tasks, runs on its own.
        match self.task_support(&request.name) {
            TaskSupport::Required if !self.takes_tasks(&context) => {
                return Err(task_required(&request.name, self.inner.tasks.on));
            }
            TaskSupport::Never => {}
            support if self.takes_tasks(&context) => {
                return self.call_as_task(request, &context, support).await;
            }
            _ => {}
        }
        let bound = self.bound(&request.name, &context.meta)?;
        let person = self.person(&request, &context, &bound)?;
        let call = self.call_as(&request.name, request.arguments, &context.meta, person.clone());
        #[cfg(feature = "tracing")]
        let call = tracing::Instrument::instrument(call, span.clone());
        let result = tokio::select! {
            // The call first: one answered at its first poll never registers a waiter on the token.
            biased;
            result = call => result,
            // The client gave up: the attempt's future is dropped with this one.
            () = context.ct.cancelled() => Err(ErrorData::invalid_request("the client cancelled the call", None)),
        };
        #[cfg(feature = "tracing")]
        match &result {
            Ok(result) if result.is_error == Some(true) => {
                span.record("error.type", "tool_error");
            }
            Ok(_) => {}
            Err(error) => {
                span.record("error.type", tracing::field::display(error.code.0));
            }
        }
        // Over rounds (2026-07-28), a question the engine asked goes to the client as input required,
        // in place of the report of the call that could not go on without the answer.
        if let (Ok(_), Some(person)) = (&result, &person)
            && let Some(input) = person.input_required(&self.inner.codec, &bound)
        {
            return input.map(Into::into).map_err(|why| ErrorData::internal_error(why, None));
        }
        result.map(Into::into)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        McpServer::get_task(self, &request.task_id, &context).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        McpServer::update_task(self, &request.task_id, request.input_responses, &context).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        McpServer::cancel_task(self, &request.task_id, &context).await
    }

    /// A request rmcp could not read as the method it names arrives here: a `tools/call` whose params
    /// are not `{ "name": ..., "arguments": {...} }` is told what is wrong with them (invalid params),
    /// not that the method does not exist.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(malformed(&request.method, request.params))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.tools.iter().find(|tool| tool.name == name).cloned()
    }
}
