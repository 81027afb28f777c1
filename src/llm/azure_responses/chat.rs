//! azure's Chat Completions models (pi's `providers/azure.js`: `openai-completions` wrapped by
//! `azureStreams`): the plain Chat Completions adapter with Azure's base-URL resolution and the
//! deployment name as the body's `model` (the message keeps the catalog id).

use super::*;
use crate::cancel::CancelToken;
use crate::llm::openai_completions::{self, build_request, StreamState};

/// The Chat Completions stream of an azure model.
pub struct AzureChat<'a>(StreamState<'a>);

impl<'a> WireApi<'a> for AzureChat<'a> {
    const ABORT_TEXTS: AbortTexts = <StreamState<'a> as WireApi<'a>>::ABORT_TEXTS;
    const DISPATCH_TRAILING: bool = <StreamState<'a> as WireApi<'a>>::DISPATCH_TRAILING;

    fn request(
        model: &'a Model,
        ctx: &'a LlmContext,
        opts: &StreamOptions,
        _: &CancelToken,
    ) -> Result<(HttpRequest, Self), Failure> {
        let resolved = Model {
            base_url: base_url(model, opts).map_err(Failure::Error)?,
            ..model.clone()
        };
        let mut req = build_request(&resolved, ctx, opts).map_err(Failure::Error)?;
        req.body["model"] = json!(deployment_name(model, opts));
        let request = json_request(req.url, req.headers, &req.body, opts.idle_timeout)?;
        Ok((request, AzureChat(StreamState::new(model))))
    }

    fn http_error(model: &Model, status: u16, content_type: Option<&str>, body: &str) -> String {
        <StreamState<'a> as WireApi<'a>>::http_error(model, status, content_type, body)
    }

    fn on_event(
        &mut self,
        model: &Model,
        event: &SseEvent,
        out: &mut StreamedMessage<'_>,
    ) -> Result<Flow, Failure> {
        self.0.on_event(model, event, out)
    }

    fn end(
        &mut self,
        read: Result<(), Failure>,
        out: &mut StreamedMessage<'_>,
    ) -> Result<(), Failure> {
        self.0.end(read, out)
    }

    fn abort_texts(&self) -> AbortTexts {
        openai_completions::StreamState::abort_texts(&self.0)
    }
}
