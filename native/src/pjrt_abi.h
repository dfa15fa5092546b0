// hloserve's own declaration of the part of the PJRT C API ABI that the addon uses.
//
// Why not include pjrt_c_api.h: no registry artifact ships a header as new as the plugins we load
// (API 0.115), and third-party source stays out of this tree. Every declaration here is checked
// field by field (size and offset) against the header shipped in the xla-cpu-pjrt wheel by
// test/abi_check.cc; fields newer than that header carry the API minor that added them, and
// the runtime guards in plugin.cc refuse slots beyond the loaded plugin's vtable.
#pragma once

// One declaration per line, so that each reads against its line in pjrt_c_api.h: clang-format would
// spread them over five times the lines.
// clang-format off

#include <cstddef>
#include <cstdint>

namespace hloabi {

// The newest API minor whose struct layouts this file declares.
constexpr int kDeclaredMinor = 114;
constexpr int kMajor = 0;

struct PJRT_Error;
struct PJRT_Event;
struct PJRT_Client;
struct PJRT_Device;
struct PJRT_Memory;
struct PJRT_DeviceDescription;
struct PJRT_Executable;
struct PJRT_LoadedExecutable;
struct PJRT_Buffer;
struct PJRT_ExecuteContext;
struct PJRT_SendCallbackInfo;
struct PJRT_RecvCallbackInfo;
struct PJRT_Buffer_MemoryLayout;
struct PJRT_MultiSlice_Config;
struct PJRT_HloOutputCallbackInfo;
struct PJRT_SerializedExecutable;

struct PJRT_Extension_Base {
  size_t struct_size;
  int type;
  PJRT_Extension_Base* next;
};

#define HLO_ARGS_HEAD        \
  size_t struct_size;        \
  PJRT_Extension_Base* extension_start

// The plugin compares struct_size against its own; it must be offsetof(last) + sizeof(last).
#define HLO_STRUCT_SIZE(T, last) (offsetof(T, last) + sizeof(((T*)nullptr)->last))

struct PJRT_Api_Version {
  HLO_ARGS_HEAD;
  int major_version;
  int minor_version;
};

enum PJRT_Error_Code : int {
  PJRT_Error_Code_OK = 0,
  PJRT_Error_Code_UNIMPLEMENTED = 12,
};

enum PJRT_NamedValue_Type : int {
  PJRT_NamedValue_kString = 0,
  PJRT_NamedValue_kInt64 = 1,
  PJRT_NamedValue_kInt64List = 2,
  PJRT_NamedValue_kFloat = 3,
  PJRT_NamedValue_kBool = 4,
};

struct PJRT_NamedValue {
  HLO_ARGS_HEAD;
  const char* name;
  size_t name_size;
  PJRT_NamedValue_Type type;
  union {
    const char* string_value;
    int64_t int64_value;
    const int64_t* int64_array_value;
    float float_value;
    bool bool_value;
  };
  size_t value_size;
};

enum PJRT_HostBufferSemantics : int {
  kImmutableOnlyDuringCall = 0,
  kImmutableUntilTransferCompletes = 1,
  kImmutableZeroCopy = 2,
  kMutableZeroCopy = 3,
};

// --- args structs, in API order ---
struct PJRT_Error_Destroy_Args { HLO_ARGS_HEAD; PJRT_Error* error; };
struct PJRT_Error_Message_Args { HLO_ARGS_HEAD; const PJRT_Error* error; const char* message; size_t message_size; };
struct PJRT_Error_GetCode_Args { HLO_ARGS_HEAD; const PJRT_Error* error; PJRT_Error_Code code; };
struct PJRT_Plugin_Initialize_Args { HLO_ARGS_HEAD; };
struct PJRT_Plugin_Attributes_Args { HLO_ARGS_HEAD; const PJRT_NamedValue* attributes; size_t num_attributes; };
struct PJRT_Event_Destroy_Args { HLO_ARGS_HEAD; PJRT_Event* event; };
struct PJRT_Event_Await_Args { HLO_ARGS_HEAD; PJRT_Event* event; };
struct PJRT_Client_Create_Args {
  HLO_ARGS_HEAD;
  const PJRT_NamedValue* create_options;
  size_t num_options;
  void* kv_get_callback;
  void* kv_get_user_arg;
  void* kv_put_callback;
  void* kv_put_user_arg;
  PJRT_Client* client;
  void* kv_try_get_callback;
  void* kv_try_get_user_arg;
};
struct PJRT_Client_Destroy_Args { HLO_ARGS_HEAD; PJRT_Client* client; };
struct PJRT_Client_PlatformName_Args { HLO_ARGS_HEAD; PJRT_Client* client; const char* platform_name; size_t platform_name_size; };
struct PJRT_Client_PlatformVersion_Args { HLO_ARGS_HEAD; PJRT_Client* client; const char* platform_version; size_t platform_version_size; };
struct PJRT_Client_AddressableDevices_Args { HLO_ARGS_HEAD; PJRT_Client* client; PJRT_Device* const* addressable_devices; size_t num_addressable_devices; };
struct PJRT_Program { HLO_ARGS_HEAD; char* code; size_t code_size; const char* format; size_t format_size; };
struct PJRT_Client_Compile_Args {
  HLO_ARGS_HEAD;
  PJRT_Client* client;
  const PJRT_Program* program;
  const char* compile_options;
  size_t compile_options_size;
  PJRT_LoadedExecutable* executable;
};
struct PJRT_Client_BufferFromHostBuffer_Args {
  HLO_ARGS_HEAD;
  PJRT_Client* client;
  const void* data;
  int type;
  const int64_t* dims;
  size_t num_dims;
  const int64_t* byte_strides;
  size_t num_byte_strides;
  PJRT_HostBufferSemantics host_buffer_semantics;
  PJRT_Device* device;
  PJRT_Memory* memory;
  PJRT_Buffer_MemoryLayout* device_layout;
  PJRT_Event* done_with_host_buffer;
  PJRT_Buffer* buffer;
};
struct PJRT_DeviceDescription_Id_Args { HLO_ARGS_HEAD; PJRT_DeviceDescription* device_description; int id; };
struct PJRT_DeviceDescription_Kind_Args { HLO_ARGS_HEAD; PJRT_DeviceDescription* device_description; const char* device_kind; size_t device_kind_size; };
struct PJRT_DeviceDescription_DebugString_Args { HLO_ARGS_HEAD; PJRT_DeviceDescription* device_description; const char* debug_string; size_t debug_string_size; };
struct PJRT_Device_GetDescription_Args { HLO_ARGS_HEAD; PJRT_Device* device; PJRT_DeviceDescription* device_description; };
struct PJRT_Device_LocalHardwareId_Args { HLO_ARGS_HEAD; PJRT_Device* device; int local_hardware_id; };
struct PJRT_Device_AddressableMemories_Args { HLO_ARGS_HEAD; PJRT_Device* device; PJRT_Memory* const* memories; size_t num_memories; };
struct PJRT_Device_DefaultMemory_Args { HLO_ARGS_HEAD; PJRT_Device* device; PJRT_Memory* memory; };
struct PJRT_Device_MemoryStats_Args {
  HLO_ARGS_HEAD;
  PJRT_Device* device;
  int64_t bytes_in_use;
  int64_t peak_bytes_in_use;
  bool peak_bytes_in_use_is_set;
  int64_t num_allocs;
  bool num_allocs_is_set;
  int64_t largest_alloc_size;
  bool largest_alloc_size_is_set;
  int64_t bytes_limit;
  bool bytes_limit_is_set;
  int64_t bytes_reserved;
  bool bytes_reserved_is_set;
  int64_t peak_bytes_reserved;
  bool peak_bytes_reserved_is_set;
  int64_t bytes_reservable_limit;
  bool bytes_reservable_limit_is_set;
  int64_t largest_free_block_bytes;
  bool largest_free_block_bytes_is_set;
  int64_t pool_bytes;
  bool pool_bytes_is_set;
  int64_t peak_pool_bytes;
  bool peak_pool_bytes_is_set;
  int64_t peak_allocated_bytes;       // 0.113
  bool peak_allocated_bytes_is_set;   // 0.113
};
struct PJRT_Memory_Id_Args { HLO_ARGS_HEAD; PJRT_Memory* memory; int id; };
struct PJRT_Memory_Kind_Args { HLO_ARGS_HEAD; PJRT_Memory* memory; const char* kind; size_t kind_size; };
struct PJRT_Executable_Destroy_Args { HLO_ARGS_HEAD; PJRT_Executable* executable; };
struct PJRT_Executable_NumOutputs_Args { HLO_ARGS_HEAD; PJRT_Executable* executable; size_t num_outputs; };
struct PJRT_Executable_Serialize_Args {
  HLO_ARGS_HEAD;
  const PJRT_Executable* executable;
  const char* serialized_bytes;  // out, alive until serialized_executable_deleter runs
  size_t serialized_bytes_size;
  PJRT_SerializedExecutable* serialized_executable;
  void (*serialized_executable_deleter)(PJRT_SerializedExecutable* exec);
};
struct PJRT_LoadedExecutable_Destroy_Args { HLO_ARGS_HEAD; PJRT_LoadedExecutable* executable; };
struct PJRT_LoadedExecutable_GetExecutable_Args { HLO_ARGS_HEAD; PJRT_LoadedExecutable* loaded_executable; PJRT_Executable* executable; };
struct PJRT_ExecuteOptions {
  HLO_ARGS_HEAD;
  PJRT_SendCallbackInfo** send_callbacks;
  PJRT_RecvCallbackInfo** recv_callbacks;
  size_t num_send_ops;
  size_t num_recv_ops;
  int launch_id;
  const int64_t* non_donatable_input_indices;
  size_t num_non_donatable_input_indices;
  PJRT_ExecuteContext* context;
  const char* call_location;
  size_t num_tasks;
  int* task_ids;
  int64_t* incarnation_ids;
  PJRT_MultiSlice_Config* multi_slice_config;                // after 0.81
  bool use_major_to_minor_data_layout_for_callbacks;         // 0.108
  PJRT_HloOutputCallbackInfo* hlo_output_callbacks;          // 0.112
  size_t num_hlo_output_callbacks;                           // 0.112
};
struct PJRT_LoadedExecutable_Execute_Args {
  HLO_ARGS_HEAD;
  PJRT_LoadedExecutable* executable;
  PJRT_ExecuteOptions* options;
  PJRT_Buffer* const* const* argument_lists;
  size_t num_devices;
  size_t num_args;
  PJRT_Buffer** const* output_lists;
  PJRT_Event** device_complete_events;
  PJRT_Device* execute_device;
};
struct PJRT_Executable_DeserializeAndLoad_Args {
  HLO_ARGS_HEAD;
  PJRT_Client* client;
  const char* serialized_executable;
  size_t serialized_executable_size;
  PJRT_LoadedExecutable* loaded_executable;
  const char* overridden_serialized_compile_options;  // null: the options stored with the executable
  size_t overridden_serialized_compile_options_size;
};
struct PJRT_Buffer_Destroy_Args { HLO_ARGS_HEAD; PJRT_Buffer* buffer; };
struct PJRT_Buffer_ElementType_Args { HLO_ARGS_HEAD; PJRT_Buffer* buffer; int type; };
struct PJRT_Buffer_Dimensions_Args { HLO_ARGS_HEAD; PJRT_Buffer* buffer; const int64_t* dims; size_t num_dims; };
struct PJRT_Buffer_OnDeviceSizeInBytes_Args { HLO_ARGS_HEAD; PJRT_Buffer* buffer; size_t on_device_size_in_bytes; };
struct PJRT_Buffer_Memory_Args { HLO_ARGS_HEAD; PJRT_Buffer* buffer; PJRT_Memory* memory; };
struct PJRT_Buffer_IsDeleted_Args { HLO_ARGS_HEAD; PJRT_Buffer* buffer; bool is_deleted; };
struct PJRT_Buffer_IsOnCpu_Args { HLO_ARGS_HEAD; PJRT_Buffer* buffer; bool is_on_cpu; };
struct PJRT_Buffer_UnsafePointer_Args { HLO_ARGS_HEAD; PJRT_Buffer* buffer; uintptr_t buffer_pointer; };
struct PJRT_Buffer_ReadyEvent_Args { HLO_ARGS_HEAD; PJRT_Buffer* buffer; PJRT_Event* event; };
struct PJRT_Client_CreateViewOfDeviceBuffer_Args {
  HLO_ARGS_HEAD;
  PJRT_Client* client;
  void* device_buffer_ptr;
  const int64_t* dims;
  size_t num_dims;
  int element_type;
  PJRT_Buffer_MemoryLayout* layout;
  PJRT_Device* device;
  void (*on_delete_callback)(void* device_buffer_ptr, void* user_arg);
  void* on_delete_callback_arg;
  intptr_t stream;
  PJRT_Buffer* buffer;
  PJRT_Memory* memory;
};
struct PJRT_Buffer_ToHostBuffer_Args { HLO_ARGS_HEAD; PJRT_Buffer* src; PJRT_Buffer_MemoryLayout* host_layout; void* dst; size_t dst_size; PJRT_Event* event; };
struct PJRT_Executable_OutputElementTypes_Args { HLO_ARGS_HEAD; PJRT_Executable* executable; int* output_types; size_t num_output_types; };
struct PJRT_Executable_OutputDimensions_Args { HLO_ARGS_HEAD; PJRT_Executable* executable; size_t num_outputs; const int64_t* dims; const size_t* dim_sizes; };
struct PJRT_Buffer_CopyToMemory_Args { HLO_ARGS_HEAD; PJRT_Buffer* buffer; PJRT_Memory* dst_memory; PJRT_Buffer* dst_buffer; };
struct PJRT_Executable_GetCompiledMemoryStats_Args {
  HLO_ARGS_HEAD;
  PJRT_Executable* executable;
  int64_t generated_code_size_in_bytes;
  int64_t argument_size_in_bytes;
  int64_t output_size_in_bytes;
  int64_t alias_size_in_bytes;
  int64_t temp_size_in_bytes;
  int64_t host_generated_code_size_in_bytes;
  int64_t host_argument_size_in_bytes;
  int64_t host_output_size_in_bytes;
  int64_t host_alias_size_in_bytes;
  int64_t host_temp_size_in_bytes;
  int64_t peak_memory_in_bytes;
};

#undef HLO_ARGS_HEAD

#define HLO_FN(Name) PJRT_Error* (*Name)(Name##_Args*)
#define HLO_SLOT(n) void* unused_slot_##n

// The function table. Slots appear in the API's order; only the ones the addon calls are typed.
struct PJRT_Api {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Api_Version pjrt_api_version;
  void (*PJRT_Error_Destroy)(PJRT_Error_Destroy_Args*);          // 1
  void (*PJRT_Error_Message)(PJRT_Error_Message_Args*);          // 2
  HLO_FN(PJRT_Error_GetCode);                                    // 3
  HLO_FN(PJRT_Plugin_Initialize);                                // 4
  HLO_FN(PJRT_Plugin_Attributes);                                // 5
  HLO_FN(PJRT_Event_Destroy);                                    // 6
  HLO_SLOT(7);                                                   // Event_IsReady
  HLO_SLOT(8);                                                   // Event_Error
  HLO_FN(PJRT_Event_Await);                                      // 9
  HLO_SLOT(10);                                                  // Event_OnReady
  HLO_FN(PJRT_Client_Create);                                    // 11
  HLO_FN(PJRT_Client_Destroy);                                   // 12
  HLO_FN(PJRT_Client_PlatformName);                              // 13
  HLO_SLOT(14);                                                  // Client_ProcessIndex
  HLO_FN(PJRT_Client_PlatformVersion);                           // 15
  HLO_SLOT(16);                                                  // Client_Devices
  HLO_FN(PJRT_Client_AddressableDevices);                        // 17
  HLO_SLOT(18);                                                  // Client_LookupDevice
  HLO_SLOT(19);                                                  // Client_LookupAddressableDevice
  HLO_SLOT(20);                                                  // Client_AddressableMemories
  HLO_FN(PJRT_Client_Compile);                                   // 21
  HLO_SLOT(22);                                                  // Client_DefaultDeviceAssignment
  HLO_FN(PJRT_Client_BufferFromHostBuffer);                      // 23
  HLO_FN(PJRT_DeviceDescription_Id);                             // 24
  HLO_SLOT(25);                                                  // DeviceDescription_ProcessIndex
  HLO_SLOT(26);                                                  // DeviceDescription_Attributes
  HLO_FN(PJRT_DeviceDescription_Kind);                           // 27
  HLO_FN(PJRT_DeviceDescription_DebugString);                    // 28
  HLO_SLOT(29);                                                  // DeviceDescription_ToString
  HLO_FN(PJRT_Device_GetDescription);                            // 30
  HLO_SLOT(31);                                                  // Device_IsAddressable
  HLO_FN(PJRT_Device_LocalHardwareId);                           // 32
  HLO_FN(PJRT_Device_AddressableMemories);                       // 33
  HLO_FN(PJRT_Device_DefaultMemory);                             // 34
  HLO_FN(PJRT_Device_MemoryStats);                               // 35
  HLO_FN(PJRT_Memory_Id);                                        // 36
  HLO_FN(PJRT_Memory_Kind);                                      // 37
  HLO_SLOT(38);                                                  // Memory_DebugString
  HLO_SLOT(39);                                                  // Memory_ToString
  HLO_SLOT(40);                                                  // Memory_AddressableByDevices
  HLO_FN(PJRT_Executable_Destroy);                               // 41
  HLO_SLOT(42);                                                  // Executable_Name
  HLO_SLOT(43);                                                  // Executable_NumReplicas
  HLO_SLOT(44);                                                  // Executable_NumPartitions
  HLO_FN(PJRT_Executable_NumOutputs);                            // 45
  HLO_SLOT(46);                                                  // Executable_SizeOfGeneratedCodeInBytes
  HLO_SLOT(47);                                                  // Executable_GetCostAnalysis
  HLO_SLOT(48);                                                  // Executable_OutputMemoryKinds
  HLO_SLOT(49);                                                  // Executable_OptimizedProgram
  HLO_FN(PJRT_Executable_Serialize);                             // 50
  HLO_FN(PJRT_LoadedExecutable_Destroy);                         // 51
  HLO_FN(PJRT_LoadedExecutable_GetExecutable);                   // 52
  HLO_SLOT(53);                                                  // LoadedExecutable_AddressableDevices
  HLO_SLOT(54);                                                  // LoadedExecutable_Delete
  HLO_SLOT(55);                                                  // LoadedExecutable_IsDeleted
  HLO_FN(PJRT_LoadedExecutable_Execute);                         // 56
  HLO_FN(PJRT_Executable_DeserializeAndLoad);                    // 57
  HLO_SLOT(58);                                                  // LoadedExecutable_Fingerprint
  HLO_FN(PJRT_Buffer_Destroy);                                   // 59
  HLO_FN(PJRT_Buffer_ElementType);                               // 60
  HLO_FN(PJRT_Buffer_Dimensions);                                // 61
  HLO_SLOT(62);                                                  // Buffer_UnpaddedDimensions
  HLO_SLOT(63);                                                  // Buffer_DynamicDimensionIndices
  HLO_SLOT(64);                                                  // Buffer_GetMemoryLayout
  HLO_FN(PJRT_Buffer_OnDeviceSizeInBytes);                       // 65
  HLO_SLOT(66);                                                  // Buffer_Device
  HLO_FN(PJRT_Buffer_Memory);                                    // 67
  HLO_SLOT(68);                                                  // Buffer_Delete
  HLO_FN(PJRT_Buffer_IsDeleted);                                 // 69
  HLO_SLOT(70);                                                  // Buffer_CopyToDevice
  HLO_FN(PJRT_Buffer_ToHostBuffer);                              // 71
  HLO_FN(PJRT_Buffer_IsOnCpu);                                   // 72
  HLO_FN(PJRT_Buffer_ReadyEvent);                                // 73
  HLO_FN(PJRT_Buffer_UnsafePointer);                             // 74
  HLO_SLOT(75); HLO_SLOT(76); HLO_SLOT(77);                       // 75-77
  HLO_SLOT(78); HLO_SLOT(79); HLO_SLOT(80); HLO_SLOT(81); HLO_SLOT(82);                // CopyToDeviceStream
  HLO_SLOT(83); HLO_SLOT(84); HLO_SLOT(85); HLO_SLOT(86); HLO_SLOT(87); HLO_SLOT(88);  // Topology
  HLO_SLOT(89);                                                  // TopologyDescription_Attributes
  HLO_SLOT(90);                                                  // PJRT_Compile
  HLO_FN(PJRT_Executable_OutputElementTypes);                    // 91
  HLO_FN(PJRT_Executable_OutputDimensions);                      // 92
  HLO_FN(PJRT_Buffer_CopyToMemory);                              // 93
  HLO_FN(PJRT_Client_CreateViewOfDeviceBuffer);                  // 94
  HLO_SLOT(95); HLO_SLOT(96);                                    // 95-96
  HLO_FN(PJRT_Executable_GetCompiledMemoryStats);                // 97
};

#undef HLO_FN
#undef HLO_SLOT

// True when the plugin's table reaches `field`; a newer header must never call past the
// plugin's vtable.
#define HLO_HAS(api, field) \
  ((api)->struct_size >= offsetof(::hloabi::PJRT_Api, field) + sizeof(void*) && (api)->field != nullptr)

}  // namespace hloabi
