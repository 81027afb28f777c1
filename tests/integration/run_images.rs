//! Images in a run: prompt and queued images sent to the provider, resized or converted to the
//! model's limits, or replaced by a note or a placeholder (a text-only model, `blockImages`, the
//! build without the `images` feature); and the `read` tool returning image files.

use serde_json::json;

use crate::support::mock_llm::MockLlm;
use crate::support::records::{find, norm};
use crate::support::run::{
    agent_for, request_messages, run_command, run_prompt, text_reply, tool_call, PNG_B64,
};

// What only the tests of the image processing (the `images` feature) use.
#[cfg(feature = "images")]
use {
    crate::support::agent::mock_models_json,
    crate::support::records::{find_all, kinds},
    crate::support::run::fast_settings,
    crate::support::{Agent, TempDir},
    serde_json::Value,
};

#[test]
fn prompt_images_go_to_the_provider_or_become_a_placeholder() {
    let mock =
        MockLlm::start(json!({"replies": [text_reply("A red square."), text_reply("Still red.")]}));
    let mut agent = agent_for(&mock).spawn();
    let image = json!({"type": "image", "data": PNG_B64, "mimeType": "image/png"});
    let recs = run_command(
        &mut agent,
        json!({"id": "p1", "type": "prompt", "message": "What is this?", "images": [image]}),
    );
    let (_, user) = find(
        &recs,
        json!({"type":"message_end","message":{"role":"user"}}),
    );
    assert_eq!(
        norm(&user["message"]),
        json!({"role":"user","content":[{"type":"text","text":"What is this?"},
               {"type":"image","data":PNG_B64,"mimeType":"image/png"}],"timestamp":0})
    );
    assert_eq!(
        request_messages(&mock, 0),
        json!([{"role":"user","content":[
            {"type":"text","text":"What is this?"},
            {"type":"image","source":{"type":"base64","media_type":"image/png","data":PNG_B64}}
        ]}])
    );

    // A text-only model: the stored messages keep the image, the request carries placeholders.
    let r = agent.request(
        "m",
        json!({"type": "set_model", "provider": "mock", "modelId": "mock-haiku"}),
    );
    assert_eq!(r["success"], true, "{r}");
    let recs = run_command(
        &mut agent,
        json!({"id": "p2", "type": "prompt", "message": "And now?", "images": [image, image]}),
    );
    let (_, user) = find(
        &recs,
        json!({"type":"message_end","message":{"role":"user"}}),
    );
    assert_eq!(user["message"]["content"].as_array().unwrap().len(), 3);
    let placeholder =
        json!({"type":"text","text":"(image omitted: model does not support images)"});
    assert_eq!(
        request_messages(&mock, 1),
        json!([
            {"role":"user","content":[{"type":"text","text":"What is this?"}, placeholder]},
            {"role":"assistant","content":[{"type":"text","text":"A red square."}]},
            {"role":"user","content":[{"type":"text","text":"And now?"}, placeholder]}
        ])
    );
}

#[cfg(feature = "images")]
/// A `width`×`height` gradient (compresses well, so it stays PNG when resized) as PNG bytes.
fn gradient_png(width: u32, height: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([
            (x % 256) as u8,
            (y % 256) as u8,
            ((x / 256 + y / 256) * 40 % 256) as u8,
        ])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png)
        .expect("encode png");
    out.into_inner()
}

#[cfg(feature = "images")]
/// Width and height of base64 image data.
fn image_dimensions(data: &Value) -> (u32, u32) {
    let bytes = pi_rpc::image::base64::decode(data.as_str().expect("base64 data"));
    let img = image::load_from_memory(&bytes).expect("a decodable image");
    (img.width(), img.height())
}

#[cfg(feature = "images")]
#[test]
fn prompt_with_a_large_png_sends_it_resized_with_a_dimension_note() {
    let mock = MockLlm::start(json!({"replies": [text_reply("Seen.")]}));
    let mut agent = agent_for(&mock).spawn();
    let png = pi_rpc::image::base64::encode(&gradient_png(3000, 2400));
    let recs = run_command(
        &mut agent,
        json!({"id": "p1", "type": "prompt", "message": "Describe it",
               "images": [{"type": "image", "data": png, "mimeType": "image/png"}]}),
    );
    assert_eq!(
        kinds(&recs[..5]),
        [
            "response:prompt",
            "agent_start",
            "turn_start",
            "message_start:system",
            "message_end:system"
        ]
    );
    let text = "Describe it\n\n[Image: original 3000x2400, displayed at 2000x1600. \
                Multiply coordinates by 1.50 to map to original image.]";
    let sent = request_messages(&mock, 0);
    let content = &sent[0]["content"];
    assert_eq!(content[0], json!({"type": "text", "text": text}));
    assert_eq!(content[1]["source"]["media_type"], "image/png");
    let data = &content[1]["source"]["data"];
    assert!(data.as_str().unwrap().len() < png.len());
    assert_eq!(image_dimensions(data), (2000, 1600));
    // The message in the events (and the session) is the normalized one the provider got.
    let (_, user) = find(
        &recs,
        json!({"type":"message_end","message":{"role":"user"}}),
    );
    assert_eq!(
        norm(&user["message"]),
        json!({"role":"user","content":[{"type":"text","text":text},
               {"type":"image","data":data,"mimeType":"image/png"}],"timestamp":0})
    );
}

/// The minimal build (`--no-default-features`, no image codecs): an inline-format image that
/// fits passes unchanged; one that needs converting is left out with a note naming the
/// missing support.
#[cfg(not(feature = "images"))]
#[test]
fn without_the_images_feature_fitting_images_pass_and_others_say_why() {
    let mock = MockLlm::start(json!({"replies": [text_reply("ok")]}));
    let mut agent = agent_for(&mock).spawn();
    run_command(
        &mut agent,
        json!({"id": "p1", "type": "prompt", "message": "two images", "images": [
            {"type": "image", "data": PNG_B64, "mimeType": "image/png"},
            {"type": "image", "data": "Qk0eAAAAAAAAABoAAAAMAAAAAQABAAEAGAAAAP8A", "mimeType": "image/bmp"},
        ]}),
    );
    let sent = request_messages(&mock, 0);
    assert_eq!(
        sent[0]["content"],
        json!([
            {"type": "text", "text": "two images\n\n[Image omitted: this pi-rpc build has no image \
                processing (built without the `images` feature), so it cannot convert this image \
                to a supported inline image format (PNG, JPEG, GIF, WebP).]"},
            {"type":"image","source":{"type":"base64","media_type":"image/png","data":PNG_B64}}
        ])
    );
}

#[cfg(feature = "images")]
#[test]
fn prompt_images_tiny_kept_byte_identical_broken_becomes_the_omitted_note() {
    let mock = MockLlm::start(json!({"replies": [text_reply("ok")]}));
    let mut agent = agent_for(&mock).spawn();
    let bmp = {
        let img = image::RgbImage::from_pixel(3, 2, image::Rgb([0, 200, 0]));
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_to(&mut out, image::ImageFormat::Bmp)
            .expect("encode bmp");
        pi_rpc::image::base64::encode(&out.into_inner())
    };
    let recs = run_command(
        &mut agent,
        json!({"id": "p1", "type": "prompt", "message": "three images", "images": [
            {"type": "image", "data": PNG_B64, "mimeType": "image/png"},
            {"type": "image", "data": "bm90IGFuIGltYWdl", "mimeType": "image/png"},
            {"type": "image", "data": bmp, "mimeType": "image/bmp"},
        ]}),
    );
    let text = "three images\n\n\
                [Image omitted: could not be resized below the inline image size limit.]\n\
                [Image converted from image/bmp to image/png.]";
    let sent = request_messages(&mock, 0);
    let content = sent[0]["content"].as_array().unwrap();
    assert_eq!(content.len(), 3);
    assert_eq!(content[0], json!({"type": "text", "text": text}));
    assert_eq!(
        content[1],
        json!({"type":"image","source":{"type":"base64","media_type":"image/png","data":PNG_B64}})
    );
    assert_eq!(content[2]["source"]["media_type"], "image/png");
    assert_eq!(image_dimensions(&content[2]["source"]["data"]), (3, 2));
    let (_, user) = find(
        &recs,
        json!({"type":"message_end","message":{"role":"user"}}),
    );
    assert_eq!(user["message"]["content"][0]["text"], text);
    assert_eq!(user["message"]["content"][1]["data"], PNG_B64);
}

#[cfg(feature = "images")]
#[test]
fn queued_images_are_normalized_at_delivery_with_the_current_models_limits() {
    let mock = MockLlm::start(json!({"replies": [text_reply("a1"), text_reply("a2")]}));
    let mut models = mock_models_json(&mock.base_url());
    models["providers"]["mock"]["models"]
        .as_array_mut()
        .unwrap()
        .push(
            json!({"id": "mock-small", "name": "Mock Small", "reasoning": false,
                     "input": ["text", "image"], "contextWindow": 100000, "maxTokens": 4096,
                     "inputLimits": {"images": {"resize": {"maxWidth": 100, "maxHeight": 100}}},
                     "cost": {"input": 1, "output": 5, "cacheRead": 0.1, "cacheWrite": 1.25}}),
        );
    let mut agent = Agent::builder()
        .models(Some(models))
        .settings(fast_settings())
        .spawn();
    let png = pi_rpc::image::base64::encode(&gradient_png(400, 200));
    let r = agent.request(
        "s",
        json!({"type": "steer", "message": "small one",
               "images": [{"type": "image", "data": png, "mimeType": "image/png"}]}),
    );
    assert_eq!(r["success"], true, "{r}");
    let r = agent.request(
        "f",
        json!({"type": "follow_up", "message": "broken one",
               "images": [{"type": "image", "data": "AAAA", "mimeType": "image/webp"}]}),
    );
    assert_eq!(r["success"], true, "{r}");
    // Queued under mock-sonnet (2000 px), delivered under mock-small (100 px).
    let r = agent.request(
        "m",
        json!({"type": "set_model", "provider": "mock", "modelId": "mock-small"}),
    );
    assert_eq!(r["success"], true, "{r}");
    let recs = run_prompt(&mut agent, "p", "go");
    let steer_text = "small one\n\n[Image: original 400x200, displayed at 100x50. \
                      Multiply coordinates by 4.00 to map to original image.]";
    let follow_text =
        "broken one\n\n[Image omitted: could not be resized below the inline image size limit.]";
    let users: Vec<Value> = find_all(
        &recs,
        json!({"type":"message_end","message":{"role":"user"}}),
    )
    .into_iter()
    .map(|r| r["message"]["content"].clone())
    .collect();
    assert_eq!(users.len(), 3);
    assert_eq!(users[0], json!([{"type":"text","text":"go"}]));
    assert_eq!(users[1][0], json!({"type":"text","text":steer_text}));
    assert_eq!(image_dimensions(&users[1][1]["data"]), (100, 50));
    assert_eq!(users[2], json!([{"type":"text","text":follow_text}]));
    let sent = request_messages(&mock, 1);
    assert_eq!(sent[1]["content"][0]["text"], steer_text);
    assert_eq!(
        sent[3]["content"],
        json!([{"type":"text","text":follow_text}])
    );
}

#[cfg(feature = "images")]
#[test]
fn image_settings_auto_resize_off_and_block_images() {
    let mock = MockLlm::start(json!({"replies": [text_reply("a1"), text_reply("a2")]}));
    let mut settings = fast_settings();
    settings["images"] = json!({"autoResize": false});
    let mut agent = agent_for(&mock).settings(settings).spawn();
    // autoResize off: a picture over the limits goes out unchanged.
    let png = pi_rpc::image::base64::encode(&gradient_png(2100, 10));
    run_command(
        &mut agent,
        json!({"id": "p1", "type": "prompt", "message": "wide",
               "images": [{"type": "image", "data": png, "mimeType": "image/png"}]}),
    );
    let sent = request_messages(&mock, 0);
    assert_eq!(sent[0]["content"][0]["text"], "wide");
    assert_eq!(sent[0]["content"][1]["source"]["data"], png);

    let mock = MockLlm::start(json!({"replies": [text_reply("a1")]}));
    let mut settings = fast_settings();
    settings["images"] = json!({"blockImages": true});
    let mut agent = agent_for(&mock).settings(settings).spawn();
    let image = json!({"type": "image", "data": PNG_B64, "mimeType": "image/png"});
    let recs = run_command(
        &mut agent,
        json!({"id": "p1", "type": "prompt", "message": "blocked", "images": [image, image]}),
    );
    // The history keeps the images; the request replaces them by one note.
    let (_, user) = find(
        &recs,
        json!({"type":"message_end","message":{"role":"user"}}),
    );
    assert_eq!(user["message"]["content"].as_array().unwrap().len(), 3);
    assert_eq!(
        request_messages(&mock, 0),
        json!([{"role":"user","content":[{"type":"text","text":"blocked"},
                                         {"type":"text","text":"Image reading is disabled."}]}])
    );
}

#[cfg(feature = "images")]
#[test]
fn read_of_a_big_image_file_returns_it_resized_with_the_dimension_note() {
    let dir = TempDir::new("big-image");
    let path = dir.path().join("wide.png");
    std::fs::write(&path, gradient_png(2600, 1300)).expect("write image");
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t1", "read", json!({"path": path.display().to_string()}))]},
        text_reply("seen"),
    ]}));
    let mut agent = agent_for(&mock).spawn();
    let recs = run_prompt(&mut agent, "p1", "look");
    let (_, end) = find(&recs, json!({"type": "tool_execution_end"}));
    let note = "Read image file [image/png]\n[Image: original 2600x1300, displayed at 2000x1000. \
                Multiply coordinates by 1.30 to map to original image.]";
    let content = &end["result"]["content"];
    assert_eq!(content[0], json!({"type":"text","text":note}));
    assert_eq!(content[1]["mimeType"], "image/png");
    assert_eq!(image_dimensions(&content[1]["data"]), (2000, 1000));
    assert_eq!(end["result"]["structuredContent"]["note"], note);
    let sent = request_messages(&mock, 1);
    let n = sent.as_array().unwrap().len();
    assert_eq!(
        sent[n - 1],
        json!({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[
            {"type":"text","text":note},
            {"type":"image","source":{"type":"base64","media_type":"image/png","data":content[1]["data"]}}
        ],"is_error":false}]})
    );
}

#[cfg(feature = "images")]
#[test]
fn read_of_an_image_follows_auto_resize_and_the_models_limits() {
    let dir = TempDir::new("image-settings");
    let path = dir.path().join("wide.png");
    let png = gradient_png(2600, 1300);
    std::fs::write(&path, &png).expect("write image");
    let read = || {
        json!({"replies": [
            {"blocks": [tool_call("t1", "read", json!({"path": path.display().to_string()}))]},
            text_reply("seen"),
        ]})
    };
    // images.autoResize off: the file goes out unchanged.
    let mock = MockLlm::start(read());
    let mut agent = agent_for(&mock)
        .settings(json!({"images": {"autoResize": false}}))
        .spawn();
    let recs = run_prompt(&mut agent, "p1", "look");
    let (_, end) = find(&recs, json!({"type": "tool_execution_end"}));
    let content = &end["result"]["content"];
    assert_eq!(
        content[0],
        json!({"type":"text","text":"Read image file [image/png]"})
    );
    assert_eq!(image_dimensions(&content[1]["data"]), (2600, 1300));
    // The model's own inputLimits decide the size.
    let mock = MockLlm::start(read());
    let mut models = mock_models_json(&mock.base_url());
    models["providers"]["mock"]["models"][0]["inputLimits"] =
        json!({"images": {"resize": {"maxWidth": 1000, "maxHeight": 1000}}});
    let mut agent = agent_for(&mock).models(Some(models)).spawn();
    let recs = run_prompt(&mut agent, "p1", "look");
    let (_, end) = find(&recs, json!({"type": "tool_execution_end"}));
    assert_eq!(
        image_dimensions(&end["result"]["content"][1]["data"]),
        (1000, 500)
    );
}

#[test]
fn read_tool_image_goes_back_as_an_image_or_a_placeholder() {
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [tool_call("t1", "read", json!({"path": "red.png"}))]},
        text_reply("red"),
        {"blocks": [tool_call("t2", "read", json!({"path": "red.png"}))]},
        text_reply("red again"),
    ]}));
    let mut agent = agent_for(&mock).spawn();
    let r = agent.request(
        "b",
        json!({"type": "bash", "command": format!("echo {PNG_B64} | base64 -d > red.png")}),
    );
    assert_eq!(r["data"]["exitCode"], 0);
    let recs = run_prompt(&mut agent, "p1", "look");
    let (_, end) = find(&recs, json!({"type": "tool_execution_end"}));
    assert_eq!(
        end["result"]["content"],
        json!([{"type":"text","text":"Read image file [image/png]"},
               {"type":"image","data":PNG_B64,"mimeType":"image/png"}])
    );
    assert_eq!(end["isError"], false);
    let sent = request_messages(&mock, 1);
    let n = sent.as_array().unwrap().len();
    assert_eq!(
        sent[n - 1],
        json!({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[
            {"type":"text","text":"Read image file [image/png]"},
            {"type":"image","source":{"type":"base64","media_type":"image/png","data":PNG_B64}}
        ],"is_error":false}]})
    );

    let r = agent.request(
        "m",
        json!({"type": "set_model", "provider": "mock", "modelId": "mock-haiku"}),
    );
    assert_eq!(r["success"], true);
    run_prompt(&mut agent, "p2", "look again");
    let sent = request_messages(&mock, 3);
    let placeholder = json!({"role":"user","content":[{"type":"tool_result","tool_use_id":"t2",
        "content":"Read image file [image/png]\n(tool image omitted: model does not support images)",
        "is_error":false}]});
    let n = sent.as_array().unwrap().len();
    assert_eq!(sent[n - 1], placeholder);
    assert_eq!(
        sent[3]["content"][0]["content"],
        json!("Read image file [image/png]\n(tool image omitted: model does not support images)")
    );
}
