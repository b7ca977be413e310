# clawguard_host_room(NAME [ROOMS room...] SOURCES file... [LINK target...] [PRIVATE_LINK target...])
# adds the static library clawguard_host_NAME from host/NAME/<SOURCES>. ROOMS are the rooms it may
# use: its link line, and the only "host/<room>/…" includes its files may have besides its own —
# checked on every build by cmake/CheckRoomIncludes.cmake, so a wrong-way include fails the build
# with the file, the line and the arrows that are allowed.
function(clawguard_host_room name)
  cmake_parse_arguments(PARSE_ARGV 1 ROOM "" "" "ROOMS;SOURCES;LINK;PRIVATE_LINK")
  if(NOT ROOM_SOURCES)
    message(FATAL_ERROR "clawguard_host_room(${name}): no SOURCES")
  endif()
  set(dir ${CMAKE_CURRENT_SOURCE_DIR}/${name})
  list(TRANSFORM ROOM_SOURCES PREPEND ${dir}/)
  set(target clawguard_host_${name})
  add_library(${target} STATIC ${ROOM_SOURCES})
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)
  set(room_targets ${ROOM_ROOMS})
  list(TRANSFORM room_targets PREPEND clawguard_host_)
  target_link_libraries(${target} PUBLIC ${room_targets} ${ROOM_LINK} PRIVATE ${ROOM_PRIVATE_LINK})
  clawguard_target_defaults(${target})
  add_custom_target(${target}_arrows
    COMMAND ${CMAKE_COMMAND} -DROOM=${name} "-DALLOWED=${ROOM_ROOMS}" -DDIR=${dir}
            -P ${PROJECT_SOURCE_DIR}/cmake/CheckRoomIncludes.cmake
    COMMENT "Checking the includes of host/${name} against its arrows"
    VERBATIM)
  add_dependencies(${target} ${target}_arrows)
endfunction()
