//! Live calls to Mistral and Azure OpenAI (see `llm_live` for what each checks). They run only
//! with credentials in the environment and otherwise return at once, saying so on stderr:
//! `MISTRAL_API_KEY`; `AZURE_OPENAI_API_KEY` plus `AZURE_OPENAI_BASE_URL` or
//! `AZURE_OPENAI_RESOURCE_NAME` (and, as for pi, `AZURE_OPENAI_DEPLOYMENT_NAME_MAP` /
//! `AZURE_OPENAI_API_VERSION` when the deployment is not named after the model).
//! `PI_LIVE_MISTRAL_MODEL` / `PI_LIVE_AZURE_MODEL` pick another catalog model.

use crate::llm_live::{ask, live_model};

#[test]
fn live_mistral_conversations() {
    let Some((model, opts)) =
        live_model("MISTRAL_API_KEY", "mistral", "mistral-small-latest", None)
    else {
        return;
    };
    assert_eq!(model.api, "mistral-conversations");
    ask(&model, &opts);
}

#[test]
fn live_azure_openai_responses() {
    let endpoint_set = ["AZURE_OPENAI_BASE_URL", "AZURE_OPENAI_RESOURCE_NAME"]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|s| !s.trim().is_empty()));
    if !endpoint_set {
        eprintln!(
            "skipped: neither AZURE_OPENAI_BASE_URL nor AZURE_OPENAI_RESOURCE_NAME is set \
             (live azure test)"
        );
        return;
    }
    let Some((model, opts)) = live_model("AZURE_OPENAI_API_KEY", "azure", "gpt-4.1-mini", None)
    else {
        return;
    };
    assert_eq!(model.api, "azure-openai-responses");
    ask(&model, &opts);
}
