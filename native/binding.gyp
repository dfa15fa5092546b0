{
  "targets": [
    {
      "target_name": "hloserve_pjrt",
      "sources": [
        "src/addon.cc",
        "src/addon_data.cc",
        "src/arena_wrap.cc",
        "src/buffer_wrap.cc",
        "src/build_nudge.cc",
        "src/client_wrap.cc",
        "src/device_arena.cc",
        "src/executable_wrap.cc",
        "src/handles.cc",
        "src/malloc_tuning.cc",
        "src/memory_advice.cc",
        "src/plugin.cc",
        "src/shm_io.cc",
        "src/status.cc",
        "src/task_pool.cc",
        "src/tensor_helper.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NODE_ADDON_API_DISABLE_DEPRECATED", "NODE_ADDON_API_CPP_EXCEPTIONS_ALL"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions", "-fno-rtti"],
      "cflags_cc": ["-std=c++17", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers"],
      "libraries": ["-ldl", "-lpthread"],
      "conditions": [
        ["OS=='linux'", { "ldflags": ["-Wl,--as-needed"] }]
      ]
    },
    {
      "target_name": "hloserve_thread",
      "sources": ["src/thread_priority.cc"],
      "defines": ["NAPI_VERSION=8"],
      "cflags_cc": ["-std=c++17", "-Wall", "-Wextra", "-Wno-unused-parameter"]
    }
  ]
}
